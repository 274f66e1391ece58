// Backoff schedule (spec/llm.md §6.1) and Retry-After parsing (RFC 9110 §10.2.3,
// HTTP-date per §5.6.7 including the obsolete RFC 850 and asctime forms).
#include <rath/net/retry.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <random>

namespace rath::net {

Seconds backoff_delay(const RetryPolicy& policy, int attempt_index, std::optional<Seconds> retry_after,
                      double unit_random) {
    const double cap = std::max(0.0, policy.cap.count());
    if (retry_after) return Seconds(std::clamp(retry_after->count(), 0.0, cap));
    const double base = std::max(0.0, policy.base.count());
    const int exponent = std::clamp(attempt_index, 0, 1000);
    double delay = std::min(cap, std::ldexp(base, exponent));
    if (policy.jitter) delay += std::clamp(unit_random, 0.0, 1.0) * base;
    return Seconds(delay);
}

Seconds backoff_delay(const RetryPolicy& policy, int attempt_index, std::optional<Seconds> retry_after) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    thread_local std::uniform_real_distribution<double> unit(0.0, 1.0);
    return backoff_delay(policy, attempt_index, retry_after, unit(rng));
}

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Non-negative decimal: digits with an optional fraction ("12", "1.5", ".5").
std::optional<double> parse_decimal(std::string_view s) {
    s = trim(s);
    if (s.empty()) return std::nullopt;
    bool digit = false, dot = false;
    for (char c : s) {
        if (c >= '0' && c <= '9') digit = true;
        else if (c == '.' && !dot) dot = true;
        else return std::nullopt;
    }
    if (!digit) return std::nullopt;
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

class Scanner {
public:
    explicit Scanner(std::string_view s) : s_(s) {}
    bool done() const { return i_ == s_.size(); }
    void spaces() {
        while (i_ < s_.size() && s_[i_] == ' ') ++i_;
    }
    bool lit(char c) {
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    std::string_view word() {
        std::size_t b = i_;
        while (i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_]))) ++i_;
        return s_.substr(b, i_ - b);
    }
    // Between min_digits and max_digits digits.
    std::optional<int> number(std::size_t min_digits, std::size_t max_digits) {
        std::size_t b = i_;
        int v = 0;
        while (i_ < s_.size() && i_ - b < max_digits && std::isdigit(static_cast<unsigned char>(s_[i_])))
            v = v * 10 + (s_[i_++] - '0');
        if (i_ - b < min_digits) return std::nullopt;
        return v;
    }

private:
    std::string_view s_;
    std::size_t i_ = 0;
};

std::optional<unsigned> month_of(std::string_view m) {
    static constexpr std::array<std::string_view, 12> names{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (unsigned i = 0; i < names.size(); ++i)
        if (m == names[i]) return i + 1;
    return std::nullopt;
}

struct Fields {
    int year = 0;
    unsigned month = 0, day = 0;
    int hour = 0, minute = 0, second = 0;
};

bool time_of_day(Scanner& sc, Fields& f) {
    auto h = sc.number(2, 2);
    if (!h || !sc.lit(':')) return false;
    auto m = sc.number(2, 2);
    if (!m || !sc.lit(':')) return false;
    auto s = sc.number(2, 2);
    if (!s) return false;
    f.hour = *h, f.minute = *m, f.second = *s;
    return true;
}

std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view v,
                                                                     std::chrono::system_clock::time_point now) {
    Scanner sc(v);
    Fields f;
    std::string_view dayname = sc.word();
    if (dayname.size() < 3) return std::nullopt;
    if (sc.lit(',')) {
        sc.spaces();
        auto d = sc.number(1, 2);
        if (!d) return std::nullopt;
        f.day = static_cast<unsigned>(*d);
        if (sc.lit('-')) {  // RFC 850: 06-Nov-94
            auto mon = month_of(sc.word());
            if (!mon || !sc.lit('-')) return std::nullopt;
            auto yy = sc.number(2, 2);
            if (!yy) return std::nullopt;
            f.month = *mon;
            // RFC 9110: a two-digit year more than 50 years ahead is in the past century.
            const int this_year = static_cast<int>(std::chrono::year_month_day(
                                      std::chrono::floor<std::chrono::days>(now)).year());
            int y = this_year / 100 * 100 + *yy;
            if (y > this_year + 50) y -= 100;
            f.year = y;
        } else {  // IMF-fixdate: 06 Nov 1994
            sc.spaces();
            auto mon = month_of(sc.word());
            sc.spaces();
            auto y = sc.number(4, 4);
            if (!mon || !y) return std::nullopt;
            f.month = *mon;
            f.year = *y;
        }
        sc.spaces();
        if (!time_of_day(sc, f)) return std::nullopt;
        sc.spaces();
        if (sc.word() != "GMT") return std::nullopt;
    } else {  // asctime: Sun Nov  6 08:49:37 1994
        sc.spaces();
        auto mon = month_of(sc.word());
        sc.spaces();
        auto d = sc.number(1, 2);
        if (!mon || !d) return std::nullopt;
        f.month = *mon;
        f.day = static_cast<unsigned>(*d);
        sc.spaces();
        if (!time_of_day(sc, f)) return std::nullopt;
        sc.spaces();
        auto y = sc.number(4, 4);
        if (!y) return std::nullopt;
        f.year = *y;
    }
    sc.spaces();
    if (!sc.done()) return std::nullopt;
    const std::chrono::year_month_day ymd{std::chrono::year{f.year}, std::chrono::month{f.month},
                                          std::chrono::day{f.day}};
    if (!ymd.ok() || f.hour > 23 || f.minute > 59 || f.second > 60) return std::nullopt;
    return std::chrono::sys_days(ymd) + std::chrono::hours(f.hour) + std::chrono::minutes(f.minute) +
           std::chrono::seconds(f.second);
}

}  // namespace

std::optional<Seconds> parse_retry_after(std::string_view value, std::chrono::system_clock::time_point now) {
    value = trim(value);
    if (value.empty()) return std::nullopt;
    if (auto secs = parse_decimal(value)) return Seconds(*secs);
    auto when = parse_http_date(value, now);
    if (!when) return std::nullopt;
    const auto delta = std::chrono::duration_cast<Seconds>(*when - now);
    return delta.count() > 0 ? delta : Seconds(0);
}

std::optional<Seconds> retry_after_from_headers(const HttpResponse& response,
                                                std::chrono::system_clock::time_point now) {
    if (auto ms = response.header("retry-after-ms")) {
        if (auto v = parse_decimal(*ms)) return Seconds(*v / 1000.0);
    }
    if (auto ra = response.header("retry-after")) return parse_retry_after(*ra, now);
    return std::nullopt;
}

bool is_retryable_status(int status) noexcept {
    return status == 408 || status == 409 || status == 429 || (status >= 500 && status <= 599);
}

bool is_retryable(const HttpError& error) noexcept {
    switch (error.kind()) {
        case HttpErrorKind::connect:
        case HttpErrorKind::proxy:
        case HttpErrorKind::timeout:
        case HttpErrorKind::closed: return true;
        default: return false;
    }
}

}  // namespace rath::net
