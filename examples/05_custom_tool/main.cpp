// 05 — the program from OpenRath's README, in C++: a custom `word_count` tool, an
// agent that uses it, a compressor, and a workflow composing them, run on a session
// placed on the `local` sandbox. (OpenRath's version also remembers and commits to
// agent memory; rath's memory plane is not built yet.)
#include "../common/example_llm.hpp"

#include <rath/flow.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>

// Tool: arguments as a described struct; the JSON schema is derived from it and the
// arguments are validated before the function runs.
struct WordCountInput {
    std::string text;
};
BOOST_DESCRIBE_STRUCT(WordCountInput, (), (text))

rath::tool::FlowToolPtr word_count_tool() {
    return rath::tool::make_tool<WordCountInput>(
        "word_count", "Count words in a short text.",
        [](rath::Session, WordCountInput in) {
            std::istringstream words(in.text);
            std::string w;
            long long n = 0;
            while (words >> w) ++n;
            return boost::json::value{{"words", n}};
        },
        {.parallel_safe = true, .field_descriptions = {{"text", "Text to count."}}});
}

// Workflow: agent, then compressor. ReadmeWorkflowImpl is the module; RATH_MODULE
// declares ReadmeWorkflow, the handle programs hold it by (as libtorch's TORCH_MODULE).
struct ReadmeWorkflowImpl : rath::flow::Workflow {
    explicit ReadmeWorkflowImpl(const rath::llm::Provider& provider) {
        agent = register_module("agent", rath::flow::Agent("Use the `word_count` tool, then answer briefly.",
                                                           {.loop = {.provider = provider, .tools = {word_count_tool()}}}));
        compressor = register_module("compressor",
                                     rath::flow::Compressor("Compress the run into one concise assistant message.",
                                                            {.provider = provider}));
    }
    rath::Session forward(rath::Session session) override {
        session = agent(session);
        return compressor(session);
    }
    std::string type_name() const override { return "ReadmeWorkflow"; }

    rath::flow::Agent agent{nullptr};
    rath::flow::Compressor compressor{nullptr};
};
RATH_MODULE(ReadmeWorkflow);

int main() {
    auto llm = example::make_llm(R"({"rules": [
        {"match": {"role": "user", "contains": "conversation transcript"},
         "respond": {"text": "The user asked for a word count; the word_count tool found 5 words."}},
        {"match": {"role": "user", "contains": "Count the words"},
         "respond": {"tool_calls": [{"name": "word_count",
                                     "arguments": {"text": "OpenRath makes agent clusters traceable."}}]}},
        {"match": {"role": "tool"}, "respond": {"text": "The text has 5 words ({{last}})."}}
    ]})");

    ReadmeWorkflow workflow(llm.provider);
    std::cout << *workflow << "\n\n";

    auto user_session = rath::Session::from_user_message("Count the words in: OpenRath makes agent clusters traceable.");
    user_session.to("local", "./");  // tools run in the current directory

    rath::Session out = workflow(user_session);  // pending: the agent loop and the compressor run on the runtime
    std::cout << "returned at once: " << out << "\n";
    auto rows = out.chunks();  // waits for the agent loop and the compressor
    std::cout << "compressed transcript:\n" << out << "\n";
    auto usage = out.usage();
    std::cout << "compressor tokens: " << (usage ? usage->total_tokens : 0) << "\n";
    return rows.size() == 1 ? 0 : 1;
}
