#include "lib/memory/analyzer.hpp"

#include <algorithm>
#include <array>

namespace rath::memory::detail {

std::optional<AnalyzerKind> parse_analyzer(std::string_view name) noexcept {
    if (name == "spec") return AnalyzerKind::spec;
    if (name == "stem") return AnalyzerKind::stem;
    return std::nullopt;
}

std::string_view to_string(AnalyzerKind kind) noexcept { return kind == AnalyzerKind::stem ? "stem" : "spec"; }

bool is_stopword(std::string_view t) noexcept {
    // The classic English stopword set of Lucene's English analyzer (sorted).
    static constexpr std::array<std::string_view, 33> words{
        "a",    "an",   "and",  "are",   "as",    "at",   "be",    "but",  "by",  "for",  "if",
        "in",   "into", "is",   "it",    "no",    "not",  "of",    "on",   "or",  "such", "that",
        "the",  "their", "then", "there", "these", "they", "this", "to",   "was", "will", "with"};
    return std::binary_search(words.begin(), words.end(), t);
}

std::vector<std::string> analyze(std::string_view text, AnalyzerKind kind) {
    std::vector<std::string> out;
    for_each_ascii_token(text, [&](const std::string& tok) {
        if (kind == AnalyzerKind::spec) {
            out.push_back(tok);
        } else if (!is_stopword(tok)) {
            out.push_back(porter_stem(tok));
        }
    });
    return out;
}

namespace {

// Porter's algorithm over b[0..k]; j marks the stem end while a suffix is examined.
class Porter {
public:
    explicit Porter(std::string_view w) : b_(w), k_(static_cast<int>(w.size()) - 1) {}

    std::string run() {
        if (k_ <= 1) return b_;
        step1ab();
        if (k_ > 0) {
            step1c();
            step2();
            step3();
            step4();
            step5();
        }
        return b_.substr(0, static_cast<std::size_t>(k_ + 1));
    }

private:
    std::string b_;
    int k_;
    int j_ = 0;

    bool cons(int i) const {
        switch (b_[static_cast<std::size_t>(i)]) {
            case 'a': case 'e': case 'i': case 'o': case 'u': return false;
            case 'y': return i == 0 ? true : !cons(i - 1);
            default: return true;
        }
    }
    // The number of VC sequences in b[0..j].
    int m() const {
        int n = 0, i = 0;
        for (;;) {
            if (i > j_) return n;
            if (!cons(i)) break;
            ++i;
        }
        ++i;
        for (;;) {
            for (;;) {
                if (i > j_) return n;
                if (cons(i)) break;
                ++i;
            }
            ++i;
            ++n;
            for (;;) {
                if (i > j_) return n;
                if (!cons(i)) break;
                ++i;
            }
            ++i;
        }
    }
    bool vowel_in_stem() const {
        for (int i = 0; i <= j_; ++i)
            if (!cons(i)) return true;
        return false;
    }
    bool double_c(int j) const {
        if (j < 1) return false;
        if (b_[static_cast<std::size_t>(j)] != b_[static_cast<std::size_t>(j - 1)]) return false;
        return cons(j);
    }
    // consonant-vowel-consonant ending at i, the last not w, x or y.
    bool cvc(int i) const {
        if (i < 2 || !cons(i) || cons(i - 1) || !cons(i - 2)) return false;
        char ch = b_[static_cast<std::size_t>(i)];
        return !(ch == 'w' || ch == 'x' || ch == 'y');
    }
    bool ends(std::string_view s) {
        int len = static_cast<int>(s.size());
        if (len > k_ + 1) return false;
        if (std::string_view(b_).substr(static_cast<std::size_t>(k_ - len + 1), s.size()) != s) return false;
        j_ = k_ - len;
        return true;
    }
    void set_to(std::string_view s) {
        b_.replace(static_cast<std::size_t>(j_ + 1), static_cast<std::size_t>(k_ - j_), s);
        k_ = j_ + static_cast<int>(s.size());
    }
    void r(std::string_view s) {
        if (m() > 0) set_to(s);
    }
    char at(int i) const { return b_[static_cast<std::size_t>(i)]; }

    void step1ab() {
        if (at(k_) == 's') {
            if (ends("sses")) k_ -= 2;
            else if (ends("ies")) set_to("i");
            else if (at(k_ - 1) != 's') --k_;
        }
        if (ends("eed")) {
            if (m() > 0) --k_;
        } else if ((ends("ed") || ends("ing")) && vowel_in_stem()) {
            k_ = j_;
            if (ends("at")) set_to("ate");
            else if (ends("bl")) set_to("ble");
            else if (ends("iz")) set_to("ize");
            else if (double_c(k_)) {
                --k_;
                char ch = at(k_);
                if (ch == 'l' || ch == 's' || ch == 'z') ++k_;
            } else if (m() == 1 && cvc(k_)) {
                set_to("e");
            }
        }
    }
    void step1c() {
        if (ends("y") && vowel_in_stem()) b_[static_cast<std::size_t>(k_)] = 'i';
    }
    void step2() {
        if (k_ < 1) return;
        switch (at(k_ - 1)) {
            case 'a':
                if (ends("ational")) { r("ate"); break; }
                if (ends("tional")) { r("tion"); break; }
                break;
            case 'c':
                if (ends("enci")) { r("ence"); break; }
                if (ends("anci")) { r("ance"); break; }
                break;
            case 'e':
                if (ends("izer")) { r("ize"); break; }
                break;
            case 'l':
                if (ends("bli")) { r("ble"); break; }
                if (ends("alli")) { r("al"); break; }
                if (ends("entli")) { r("ent"); break; }
                if (ends("eli")) { r("e"); break; }
                if (ends("ousli")) { r("ous"); break; }
                break;
            case 'o':
                if (ends("ization")) { r("ize"); break; }
                if (ends("ation")) { r("ate"); break; }
                if (ends("ator")) { r("ate"); break; }
                break;
            case 's':
                if (ends("alism")) { r("al"); break; }
                if (ends("iveness")) { r("ive"); break; }
                if (ends("fulness")) { r("ful"); break; }
                if (ends("ousness")) { r("ous"); break; }
                break;
            case 't':
                if (ends("aliti")) { r("al"); break; }
                if (ends("iviti")) { r("ive"); break; }
                if (ends("biliti")) { r("ble"); break; }
                break;
            case 'g':
                if (ends("logi")) { r("log"); break; }
                break;
            default: break;
        }
    }
    void step3() {
        switch (at(k_)) {
            case 'e':
                if (ends("icate")) { r("ic"); break; }
                if (ends("ative")) { r(""); break; }
                if (ends("alize")) { r("al"); break; }
                break;
            case 'i':
                if (ends("iciti")) { r("ic"); break; }
                break;
            case 'l':
                if (ends("ical")) { r("ic"); break; }
                if (ends("ful")) { r(""); break; }
                break;
            case 's':
                if (ends("ness")) { r(""); break; }
                break;
            default: break;
        }
    }
    void step4() {
        if (k_ < 1) return;
        switch (at(k_ - 1)) {
            case 'a':
                if (ends("al")) break;
                return;
            case 'c':
                if (ends("ance")) break;
                if (ends("ence")) break;
                return;
            case 'e':
                if (ends("er")) break;
                return;
            case 'i':
                if (ends("ic")) break;
                return;
            case 'l':
                if (ends("able")) break;
                if (ends("ible")) break;
                return;
            case 'n':
                if (ends("ant")) break;
                if (ends("ement")) break;
                if (ends("ment")) break;
                if (ends("ent")) break;
                return;
            case 'o':
                if (ends("ion") && j_ >= 0 && (at(j_) == 's' || at(j_) == 't')) break;
                if (ends("ou")) break;
                return;
            case 's':
                if (ends("ism")) break;
                return;
            case 't':
                if (ends("ate")) break;
                if (ends("iti")) break;
                return;
            case 'u':
                if (ends("ous")) break;
                return;
            case 'v':
                if (ends("ive")) break;
                return;
            case 'z':
                if (ends("ize")) break;
                return;
            default: return;
        }
        if (m() > 1) k_ = j_;
    }
    void step5() {
        j_ = k_;
        if (at(k_) == 'e') {
            int a = m();
            if (a > 1 || (a == 1 && !cvc(k_ - 1))) --k_;
        }
        if (at(k_) == 'l' && double_c(k_) && m() > 1) --k_;
    }
};

}  // namespace

std::string porter_stem(std::string_view word) { return Porter(word).run(); }

}  // namespace rath::memory::detail
