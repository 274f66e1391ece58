#pragma once
// Storage for a function-local static that is never destroyed.
//
// The default runtime drains and shuts down during static destruction (a program may
// return from main with sessions still running), and its threads go on starting queued
// sessions meanwhile. A cache, registry or log sink that such a session touches would,
// as an ordinary function-local static, be destroyed before the runtime whenever it was
// first used after it: every one of them is declared `static Immortal<T>` instead.
// Constructed on first use like any function-local static; what it holds stays
// reachable, so leak checkers do not report it.
#include <new>
#include <utility>

namespace rath::async::detail {

template <class T>
class Immortal {
public:
    template <class... Args>
    explicit Immortal(Args&&... args) {
        ::new (static_cast<void*>(storage_)) T(std::forward<Args>(args)...);
    }
    Immortal(const Immortal&) = delete;
    Immortal& operator=(const Immortal&) = delete;
    ~Immortal() = default;  // deliberately leaves T alive

    T& get() noexcept { return *std::launder(reinterpret_cast<T*>(storage_)); }
    const T& get() const noexcept { return *std::launder(reinterpret_cast<const T*>(storage_)); }
    T& operator*() noexcept { return get(); }
    const T& operator*() const noexcept { return get(); }
    T* operator->() noexcept { return &get(); }
    const T* operator->() const noexcept { return &get(); }

private:
    alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace rath::async::detail
