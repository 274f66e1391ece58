// 11 — dynamic routing: a Selector asks the model which self-describing workflow fits
// the conversation; plain `if` and `while` over its choice, until it answers with an
// EmptyWorkflow (nothing applies / done).
#include "../common/example_llm.hpp"

#include <rath/flow.hpp>

#include <cstdio>
#include <memory>
#include <vector>

int main() {
    auto llm = example::make_llm(R"({
      "rules": [
        {"match": {"contains": "Candidate workflows"}, "respond": {"text": "1"}, "times": 1},
        {"match": {"contains": "Candidate workflows"}, "respond": {"text": "0"}, "times": 1},
        {"match": {"contains": "Candidate workflows"}, "respond": {"text": "2"}, "times": 1},
        {"match": {"contains": "Candidate workflows"}, "respond": {"text": "-1"}}
      ],
      "responses": [
        {"text": "Restart the router, then check the cable: the light should turn green."},
        {"text": "I have refunded the duplicate charge of 12 EUR."},
        {"text": "Glad I could help: your refund is on its way. Goodbye!"}
      ]})");
    using rath::flow::Agent;
    Agent billing("You handle billing.", {.loop = {.provider = llm.provider}, .description = "billing and refunds"});
    Agent tech("You handle technical problems.", {.loop = {.provider = llm.provider}, .description = "technical support"});
    Agent wrap_up("You close conversations politely.",
                  {.loop = {.provider = llm.provider}, .description = "wrap-up and goodbye"});
    std::vector<std::shared_ptr<rath::flow::Workflow>> team{billing, tech, wrap_up};
    rath::flow::Selector selector(llm.provider);

    std::printf("--- if: single branch ---\n");
    auto session = rath::Session::from_user_message("My internet is down.");
    auto chosen = selector->select(session, team);
    if (!chosen->is_empty()) {
        std::printf("routed to: %s\n", chosen->description().c_str());
        session = (*chosen)(session);
        std::printf("%s\n", session.text().value_or("").c_str());
    }

    std::printf("--- while: loop until done ---\n");
    session = rath::Session::from_user_message("I was charged twice this month.");
    int rounds = 0;
    for (auto next = selector->select(session, team); !next->is_empty() && rounds < 4;
         next = selector->select(session, team)) {
        std::printf("round %d -> %s\n", ++rounds, next->description().c_str());
        session = (*next)(session);
    }
    std::printf("final: %s\n", session.text().value_or("").c_str());
    return rounds == 2 ? 0 : 1;
}
