#include <rath/llm/raw_json.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <mutex>
#include <stdexcept>

namespace rath::llm {

struct RawJson::State {
    std::string text;
    mutable std::once_flag text_once, value_once;
    mutable bool has_text = false;
    mutable boost::json::value value;
};

RawJson::RawJson(std::string text) : state_(std::make_shared<State>()) {
    state_->text = std::move(text);
    state_->has_text = true;
}

RawJson::RawJson(boost::json::value value) : state_(std::make_shared<State>()) {
    state_->value = std::move(value);
    std::call_once(state_->value_once, [] {});
}

const std::string& RawJson::text() const {
    if (!state_) throw std::logic_error("RawJson is empty");
    std::call_once(state_->text_once, [this] {
        if (!state_->has_text) state_->text = boost::json::serialize(state_->value);
    });
    return state_->text;
}

const boost::json::value& RawJson::value() const {
    if (!state_) throw std::logic_error("RawJson is empty");
    std::call_once(state_->value_once, [this] { state_->value = boost::json::parse(state_->text); });
    return state_->value;
}

}  // namespace rath::llm
