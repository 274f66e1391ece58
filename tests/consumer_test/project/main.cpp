// A program outside the rath tree, built against an installed rath.
#include <rath/async.hpp>
#include <rath/version.hpp>

#include <iostream>

namespace asio = boost::asio;

int main() {
    rath::async::Runtime rt({.threads = 2});
    rath::async::TaskGroup<int> group(rt);
    for (int i = 0; i < 100; ++i) group.spawn([i]() -> asio::awaitable<int> { co_return i; });
    int sum = 0;
    for (int v : group.join()) sum += v;
    std::cout << "consumer: sum=" << sum << " version=" << rath::version() << "\n";
}
