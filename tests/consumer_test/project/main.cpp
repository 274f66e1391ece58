// A program outside the rath tree, built against an installed rath.
#include <rath/async.hpp>
#include <rath/testing/scripted_client.hpp>
#include <rath/version.hpp>

#include <iostream>

namespace asio = boost::asio;

int main() {
    rath::async::Runtime rt({.threads = 2});
    rath::async::TaskGroup<int> group(rt);
    for (int i = 0; i < 100; ++i) group.spawn([i]() -> asio::awaitable<int> { co_return i; });
    int sum = 0;
    for (int v : group.join()) sum += v;

    // rath::testing is installed beside the library, for users' own tests.
    rath::testing::ScriptedChatClient client({}, {.runtime = &rt});
    client.push(rath::testing::ScriptedReply::text("hello"));
    rath::llm::ChatRequest request;
    request.messages.push_back(rath::llm::Message::user("hi"));
    const auto answer = client.complete(request).primary_choice().message.content.value_or("");

    std::cout << "consumer: sum=" << sum << " version=" << rath::version() << " scripted=" << answer << "\n";
}
