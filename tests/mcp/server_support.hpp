#pragma once
// A ServerSession driven without a transport: texts in, the sink's messages collected.
#include <rath/mcp/jsonrpc.hpp>
#include <rath/mcp/server.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace rath::mcp::test {

struct Collected {
    boost::json::object message;
    std::optional<jsonrpc::Id> related;
    bool final = false;
};

class Collector {
public:
    Sink sink() {
        return [this](Outgoing o) {
            boost::json::object message;  // empty: a cancelled request's end
            if (!o.text.empty()) message = boost::json::parse(o.text).as_object();
            std::lock_guard lk(mu_);
            got_.push_back(Collected{std::move(message), o.related, o.final});
            cv_.notify_all();
        };
    }
    // Waits (up to 10 s) until a message satisfies `pred`, and returns it.
    Collected wait_for(const std::function<bool(const Collected&)>& pred,
                       std::chrono::milliseconds limit = std::chrono::seconds(10)) {
        std::unique_lock lk(mu_);
        Collected found;
        bool ok = cv_.wait_for(lk, limit, [&] {
            for (auto& c : got_)
                if (pred(c)) {
                    found = c;
                    return true;
                }
            return false;
        });
        if (!ok) throw std::runtime_error("no such message arrived");
        return found;
    }
    // The response to request `id`.
    boost::json::object response(std::int64_t id) {
        return wait_for([&](const Collected& c) {
                   auto* i = c.message.if_contains("id");
                   return i && i->is_int64() && i->get_int64() == id && !c.message.contains("method");
               })
            .message;
    }
    std::vector<Collected> all() {
        std::lock_guard lk(mu_);
        return got_;
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<Collected> got_;
};

inline std::string request_text(std::int64_t id, std::string method, boost::json::object params = {}) {
    return boost::json::serialize(boost::json::object{
        {"jsonrpc", "2.0"}, {"id", id}, {"method", std::move(method)}, {"params", std::move(params)}});
}

inline void initialize(ServerSession& s, Collector& c, std::string version = "2025-11-25",
                       boost::json::object capabilities = {}) {
    s.receive(request_text(0, "initialize",
                           {{"protocolVersion", version},
                            {"capabilities", std::move(capabilities)},
                            {"clientInfo", {{"name", "test"}, {"version", "1"}}}}));
    c.response(0);
    s.receive(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
}

}  // namespace rath::mcp::test
