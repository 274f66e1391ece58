// rath-fake-llm: serves rath::fake_llm::Server until SIGINT/SIGTERM. Prints exactly
// one line "listening on http://HOST:PORT" (flushed) so that scripts and benchmarks
// can learn the port when --port 0 picks one.
#include <rath/fake_llm/program.hpp>

#include <rath/fake_llm/server.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

namespace {

void usage(std::FILE* to, const char* program) {
    std::fprintf(to, "usage: %s [options]\n", program);
    std::fputs(
        "  --host HOST            address to listen on (default 127.0.0.1, env HOST)\n"
        "  --port N               port, 0 = any free one (default 0, env PORT)\n"
        "  --threads N            io threads (default 1)\n"
        "  --latency-ms N         delay before each response (default 0, env FAKE_LATENCY_MS)\n"
        "  --token-delay-ms N     delay between streamed events (default 0)\n"
        "  --script FILE          answer from a JSON script (see tools/rath-fake-llm/README.md)\n"
        "  --echo                 answer with the last message's text\n"
        "  --model NAME           model reported when a request names none (default fake-model)\n"
        "  --quiet                print nothing but the listening line\n"
        "Per request: headers x-fake-fault (429|500|529|reset|truncate|stream-error|bad-tool-json),\n"
        "x-fake-retry-after, x-fake-latency-ms, x-fake-token-delay-ms.\n",
        to);
}

bool parse_count(std::string_view s, unsigned long max, unsigned long& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    std::string copy(s);
    out = std::strtoul(copy.c_str(), &end, 10);
    return end && *end == '\0' && copy[0] != '-' && out <= max;
}

}  // namespace

namespace rath::fake_llm {

int program_main(int argc, char** argv) {
    rath::fake_llm::ServerOptions opt;
    bool quiet = false;
    unsigned long n = 0;
    if (const char* h = std::getenv("HOST"); h && *h) opt.host = h;
    if (const char* p = std::getenv("PORT"); p && *p && parse_count(p, 65535, n)) opt.port = static_cast<std::uint16_t>(n);
    if (const char* l = std::getenv("FAKE_LATENCY_MS"); l && *l && parse_count(l, 3'600'000, n))
        opt.latency = std::chrono::milliseconds(n);

    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        auto value = [&](std::string_view flag) -> std::string_view {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "rath-fake-llm: %.*s needs a value\n", int(flag.size()), flag.data());
                std::exit(2);
            }
            return argv[++i];
        };
        auto number = [&](std::string_view flag, unsigned long max) {
            std::string_view v = value(flag);
            if (!parse_count(v, max, n)) {
                std::fprintf(stderr, "rath-fake-llm: %.*s expects an integer from 0 to %lu, got \"%.*s\"\n", int(flag.size()),
                             flag.data(), max, int(v.size()), v.data());
                std::exit(2);
            }
            return n;
        };
        if (a == "--host") opt.host = value(a);
        else if (a == "--port") opt.port = static_cast<std::uint16_t>(number(a, 65535));
        else if (a == "--threads") opt.threads = std::max<unsigned long>(1, number(a, 256));
        else if (a == "--latency-ms") opt.latency = std::chrono::milliseconds(number(a, 3'600'000));
        else if (a == "--token-delay-ms") opt.token_delay = std::chrono::milliseconds(number(a, 60'000));
        else if (a == "--script") {
            opt.mode = rath::fake_llm::Mode::script;
            opt.script_path = std::string(value(a));
        } else if (a == "--echo") opt.mode = rath::fake_llm::Mode::echo;
        else if (a == "--model") opt.model = value(a);
        else if (a == "--quiet") quiet = true;
        else if (a == "--help" || a == "-h") {
            usage(stdout, argv[0]);
            return 0;
        } else {
            std::fprintf(stderr, "rath-fake-llm: unknown option \"%s\"\n", argv[i]);
            usage(stderr, argv[0]);
            return 2;
        }
    }

    // Block the stop signals before the io threads exist so that only sigwait sees them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    rath::fake_llm::Server server(opt);
    try {
        server.start();
    } catch (const rath::Error& e) {
        std::fprintf(stderr, "rath-fake-llm: %s\n", e.what());
        return 2;
    }
    std::string url = server.base_url();
    url.resize(url.size() - 3);  // without "/v1"
    std::printf("listening on %s\n", url.c_str());
    std::fflush(stdout);

    int sig = 0;
    sigwait(&stop_signals, &sig);
    server.stop();
    if (!quiet) {
        auto s = server.stats();
        std::fprintf(stderr,
                     "rath-fake-llm: stopped (%s); requests=%llu tool_call_replies=%llu final_replies=%llu streamed=%llu "
                     "faults=%llu errors=%llu not_found=%llu connections_total=%llu\n",
                     sig == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)s.requests,
                     (unsigned long long)s.tool_call_replies, (unsigned long long)s.final_replies,
                     (unsigned long long)s.streamed, (unsigned long long)s.faults, (unsigned long long)s.errors,
                     (unsigned long long)s.not_found, (unsigned long long)s.connections_total);
    }
    return 0;
}

}  // namespace rath::fake_llm
