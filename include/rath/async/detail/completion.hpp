#pragma once
// A type-erased, move-only completion for void(error_code) handlers that always
// completes by posting to the handler's own executor. Posting (rather than
// invoking inline) keeps producers from running foreign code — possibly a whole
// resumed coroutine — inside their own call.
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <utility>

namespace rath::async::detail {

class Completion {
public:
    Completion() = default;
    template <class Handler>
    explicit Completion(Handler h) : impl_(std::make_unique<Impl<Handler>>(std::move(h))) {}

    explicit operator bool() const noexcept { return impl_ != nullptr; }
    // Posts the handler with `ec`; the Completion is empty afterwards.
    void post(boost::system::error_code ec) {
        auto impl = std::move(impl_);
        if (impl) impl->post(ec);
    }

private:
    struct Base {
        virtual ~Base() = default;
        virtual void post(boost::system::error_code ec) = 0;
    };
    template <class Handler>
    struct Impl final : Base {
        explicit Impl(Handler h) : handler(std::move(h)) {}
        void post(boost::system::error_code ec) override {
            auto ex = boost::asio::get_associated_executor(handler);
            boost::asio::post(ex, [h = std::move(handler), ec]() mutable {
                // The slot belongs to the handler's context; clear it there, before
                // completing, so a late cancellation finds nothing to do.
                boost::asio::get_associated_cancellation_slot(h).clear();
                std::move(h)(ec);
            });
        }
        Handler handler;
    };
    std::unique_ptr<Base> impl_;
};

}  // namespace rath::async::detail
