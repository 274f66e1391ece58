// 05 — the program from OpenRath's README, in C++: a custom `word_count` tool, an
// agent with a memory store that uses it, a compressor, and a workflow composing them,
// run on a session placed on the `local` sandbox. The agent remembers a note before the
// run (and recalls it in front of the user's message) and commits the run after it.
// OpenRath's version opens memory="local" under the config directory; this one opens a
// local store in a scratch directory, so running it leaves nothing behind.
#include "../common/example_llm.hpp"
#include "../common/scratch_dir.hpp"

#include <rath/flow.hpp>
#include <rath/memory.hpp>
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
    ReadmeWorkflowImpl(const rath::llm::Provider& provider, rath::memory::MemoryStorePtr memory) {
        agent = register_module("agent", rath::flow::Agent("Use the `word_count` tool, then answer briefly.",
                                                           {.loop = {.provider = provider, .tools = {word_count_tool()}},
                                                            .memory = std::move(memory)}));
        compressor = register_module("compressor",
                                     rath::flow::Compressor("Compress the run into one concise assistant message.",
                                                            {.provider = provider}));
    }
    rath::Session forward(rath::Session session) override {
        agent->remember_memory("The user likes compact technical summaries.");
        session = agent(session);
        auto committed = agent->commit_memory(session);  // waits for the agent's run
        if (const auto* c = std::get_if<rath::memory::CommitResult>(&committed))
            std::cout << "committed the agent's run to memory: " << c->archived_uri.value_or("(no archive)") << "\n";
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

    example::ScratchDir dir("05-memory");
    rath::memory::MemoryStoreSpec spec;
    spec.options = boost::json::object{{"path", dir.path.string()}};
    ReadmeWorkflow workflow(llm.provider, rath::memory::make_local_memory_backend()->open(spec));
    std::cout << *workflow << "\n\n";

    auto user_session = rath::Session::from_user_message("Count the words in: OpenRath makes agent clusters traceable.");
    user_session.to("local", "./");  // tools run in the current directory

    // forward() remembers, runs the agent and commits its run (commit_memory waits for
    // the agent), then returns the compressor's output pending: it runs on the runtime.
    rath::Session out = workflow(user_session);
    std::cout << "returned with the compressor pending: " << out << "\n";
    auto rows = out.chunks();  // waits for the agent loop and the compressor
    std::cout << "compressed transcript:\n" << out << "\n";
    auto usage = out.usage();
    std::cout << "compressor tokens: " << (usage ? usage->total_tokens : 0) << "\n";
    return rows.size() == 1 ? 0 : 1;
}
