#pragma once
// Deterministic replay of a recorded agent run (llm/recording.hpp): the persisted
// session's loop runs again, offline, from its recording. A replay chat client serves
// the recorded responses in order and compares each request the loop now builds with
// the recorded one; the built-in sandbox tools run again (on a fresh workspace of the
// local backend) and their results meet the recorded ones in the next request; a tool
// the replay cannot or must not run answers with its recorded result, and the report
// lists it: a tool of the program's own (a C++ function), and the built-ins of a
// session whose sandbox was remote (opensandbox: gone with its run), a local one with a
// working_dir of the user's (a replay never runs commands there), or one the session
// arrived with already open (its workspace held what the program put there before the
// run, which a fresh one would not). The replayed
// transcript is persisted under the original's identity (its session id, its parents'
// ids, the header's created_at and the trailer's closed_at: LoopOptions::identity) and
// compared with the original byte for byte, so a replay without divergence wrote the
// very same file.
//
// Thread safety: replay_session may run from any thread but a runtime's io thread (it
// blocks: file I/O and the loop). Errors: PersistenceError for a transcript that does
// not load, llm::RecordingFormatError for a malformed recording, ReplayError for a
// missing recording or one that does not belong to the transcript; a divergence is a
// result, not an error.
#include <rath/error.hpp>

#include <boost/json/value.hpp>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::async {
class Runtime;
}

namespace rath {

class ReplayError : public Error {
public:
    using Error::Error;
};

// One place where two JSON values differ: a path such as `messages[3].content` ("" for
// the values themselves) and each side's value there (unset: the side has no such key
// or element).
struct JsonDifference {
    std::string path{};
    std::optional<boost::json::value> recorded{};
    std::optional<boost::json::value> replayed{};
};

// The differences between two values, depth first, at most `limit`: objects key by key
// whatever their key order (the recorded keys first, then keys only the replay has),
// arrays element by element, numbers by value (1 equals 1.0).
[[nodiscard]] std::vector<JsonDifference> json_differences(const boost::json::value& recorded,
                                                           const boost::json::value& replayed,
                                                           std::size_t limit = 8);
// A readable rendering, one block per difference: the path, then "- recorded: <json>"
// and "+ replayed: <json>"; two strings that differ show the character where they
// start to, with some context around it instead of their whole text.
[[nodiscard]] std::string format_differences(const std::vector<JsonDifference>& diffs);

enum class DivergenceKind {
    request,       // a request differs from the recorded one
    tool_result,   // a tool result differs (seen in the next request, or in the transcript)
    extra_call,    // the replay made more model calls than were recorded
    missing_call,  // the replay finished with recorded calls left
    transcript,    // a transcript record differs although every request matched
    failed,        // the replayed loop failed (an error the recording did not have)
};
[[nodiscard]] std::string_view to_string(DivergenceKind k) noexcept;

struct ReplayDivergence {
    DivergenceKind kind = DivergenceKind::request;
    std::size_t call = 0;              // the model call (0-based) where it showed
    std::optional<std::size_t> row{};  // the transcript row concerned, when one is
    std::string summary{};             // one line
    std::vector<JsonDifference> differences{};
};

struct ReplayReport {
    std::filesystem::path transcript{};           // the original
    std::filesystem::path recording{};
    std::filesystem::path replayed_transcript{};  // what the replay persisted
    std::string session_id{};                     // the original's
    std::size_t recorded_calls = 0;
    std::size_t replayed_calls = 0;               // requests the replay made
    std::vector<std::string> tools_rerun{};       // tools that ran again (sorted, once each)
    std::vector<std::string> tools_recorded{};    // tools answered from the recording
    std::optional<ReplayDivergence> divergence{};  // the first one
    [[nodiscard]] bool identical() const noexcept { return !divergence; }
};

struct ReplayOptions {
    // The recording; default: the one beside the transcript (persistence::recording_path_for).
    std::optional<std::filesystem::path> recording{};
    // Where the replayed transcript is written (created if needed); default: a fresh
    // directory under the system temp directory (left in place: the report names it).
    // The original's own directory is refused (ReplayError): the replay's file has the
    // original's name.
    std::optional<std::filesystem::path> output_dir{};
    async::Runtime* runtime = nullptr;  // default: Runtime::default_runtime()
};

// Replays `transcript` (a persisted <id>.jsonl; its recording's path is accepted too).
[[nodiscard]] ReplayReport replay_session(const std::filesystem::path& transcript, ReplayOptions options = {});

}  // namespace rath
