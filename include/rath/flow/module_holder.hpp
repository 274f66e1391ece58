#pragma once
// ModuleHolder: the handle users hold a workflow by, as libtorch's ModuleHolder
// (torch/nn/pimpl.h). `Agent agent("prompt", opts); Session out = agent(in);
// agent->tools();` — the holder shares one AgentImpl; copies of a holder refer to the
// same module. RATH_MODULE(Name) declares the holder `Name` of a workflow `NameImpl`.
//
//   struct TeamImpl : rath::flow::Workflow {
//       explicit TeamImpl(const rath::llm::Provider& p) {
//           triage = register_module("triage", rath::flow::Agent("Route the request.", {.loop = {.provider = p}}));
//       }
//       rath::Session forward(rath::Session s) override { return triage(s); }
//       rath::flow::Agent triage{nullptr};
//   };
//   RATH_MODULE(Team);
//   Team team(provider);  rath::Session out = team(user);
//
// Thread safety: as the module it holds. A holder made from nullptr is empty; using an
// empty holder throws std::logic_error.
#include <rath/session.hpp>

#include <concepts>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace rath::flow {

template <class Impl>
class ModuleHolder {
public:
    using ContainedType = Impl;

    // Default-constructs the module (a module without a default constructor must be
    // given its arguments, or nullptr for an empty holder to assign later).
    ModuleHolder() : impl_(default_construct()) {}
    ModuleHolder(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): `Agent a = nullptr;`
    ModuleHolder(std::shared_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}  // NOLINT(google-explicit-constructor)
    // Constructs the module from `args` (not from a single holder or pointer).
    template <class Head, class... Tail>
        requires(!(sizeof...(Tail) == 0 && (std::is_base_of_v<ModuleHolder, std::remove_cvref_t<Head>> ||
                                            std::is_same_v<std::remove_cvref_t<Head>, std::shared_ptr<Impl>> ||
                                            std::is_same_v<std::remove_cvref_t<Head>, std::nullptr_t>)))
    explicit ModuleHolder(Head&& head, Tail&&... tail)
        : impl_(std::make_shared<Impl>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

    Impl* operator->() const { return get(); }
    Impl& operator*() const { return *get(); }
    Impl* get() const {
        if (!impl_) throw std::logic_error("rath::flow: use of an empty module holder (made from nullptr)");
        return impl_.get();
    }
    const std::shared_ptr<Impl>& ptr() const noexcept { return impl_; }
    bool is_empty() const noexcept { return impl_ == nullptr; }
    explicit operator bool() const noexcept { return impl_ != nullptr; }

    // The module as a pointer to one of its bases (a Selector's candidates, a list of
    // workflows).
    template <class Base>
        requires std::is_base_of_v<Base, Impl>
    operator std::shared_ptr<Base>() const {  // NOLINT(google-explicit-constructor)
        return impl_;
    }

    // forward(input) of the module.
    Session operator()(Session input) const { return (*get())(std::move(input)); }

private:
    static std::shared_ptr<Impl> default_construct() {
        static_assert(std::is_default_constructible_v<Impl>,
                      "this module has no default constructor: give it its arguments, or nullptr for an empty "
                      "holder (`Agent agent{nullptr};`) to assign later");
        return std::make_shared<Impl>();
    }

    std::shared_ptr<Impl> impl_;
};

}  // namespace rath::flow

// Declares `class Name`, the holder of the workflow `NameImpl`, with NameImpl's
// constructors.
#define RATH_MODULE(Name)                                          \
    class Name : public ::rath::flow::ModuleHolder<Name##Impl> {   \
    public:                                                        \
        using ::rath::flow::ModuleHolder<Name##Impl>::ModuleHolder; \
    }
