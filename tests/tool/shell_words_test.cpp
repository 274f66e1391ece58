// The shell-free command parser and executable resolution behind command policies
// (lib/tool/shell_words.hpp).
#include "support/temp_dir.hpp"

#include "lib/tool/shell_words.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using rath::tool::detail::resolve_executable;
using rath::tool::detail::split_shell_words;
using Words = std::vector<std::string>;

namespace {
Words words(std::string_view s) {
    auto w = split_shell_words(s);
    CHECK_MESSAGE(w.error.empty(), w.error);
    return w.words;
}
std::string refusal(std::string_view s) {
    auto w = split_shell_words(s);
    CHECK(w.words.empty());
    return w.error;
}
}  // namespace

TEST_CASE("words split on blanks and honour single quotes double quotes and backslashes") {
    CHECK(words("ls -l  /tmp") == Words{"ls", "-l", "/tmp"});
    CHECK(words("\techo\t'a b'  \"c d\"") == Words{"echo", "a b", "c d"});
    CHECK(words("echo 'a;b|c&d>e<f(g)h$i`j*k?l[m#n~o'") == Words{"echo", "a;b|c&d>e<f(g)h$i`j*k?l[m#n~o"});
    CHECK(words(R"(echo a\ b \; \$HOME \*)") == Words{"echo", "a b", ";", "$HOME", "*"});
    CHECK(words(R"(echo "q\"uote" "back\\slash" "keep\n")") == Words{"echo", "q\"uote", "back\\slash", "keep\\n"});
    CHECK(words(R"(echo "\$x" "\`y\`")") == Words{"echo", "$x", "`y`"});
    CHECK(words("echo '' \"\"") == Words{"echo", "", ""});
    CHECK(words("a'b'\"c\"d") == Words{"abcd"});
    CHECK(words("echo a#b c~d") == Words{"echo", "a#b", "c~d"});  // only at a word's start
}

TEST_CASE("shell operators expansions globs comments and newlines are refused with the reason") {
    for (const char* op : {"ls ; echo x", "ls | cat", "ls && id", "sleep 1 &", "cat < f", "echo x > f", "(id)", "echo )"})
        CHECK_MESSAGE(refusal(op).find("shell operator") != std::string::npos, op);
    CHECK(refusal("ls;echo x") == "shell operator ';' is not allowed: commands run without a shell under a command policy");
    CHECK(refusal("echo $HOME").find("shell expansion '$'") != std::string::npos);
    CHECK(refusal("echo \"$HOME\"").find("shell expansion '$'") != std::string::npos);
    CHECK(refusal("echo `id`").find("shell expansion '`'") != std::string::npos);
    CHECK(refusal("echo \"`id`\"").find("shell expansion '`'") != std::string::npos);
    CHECK(refusal("ls *.txt").find("glob character '*'") != std::string::npos);
    CHECK(refusal("ls a?").find("glob character '?'") != std::string::npos);
    CHECK(refusal("ls [ab]").find("glob character '['") != std::string::npos);
    CHECK(refusal("ls # comment").find("a comment") != std::string::npos);
    CHECK(refusal("cat ~/x").find("tilde expansion") != std::string::npos);
    CHECK(refusal("ls\nid").find("newline") != std::string::npos);
    CHECK(refusal("echo 'a\nb'").find("newline") != std::string::npos);
    CHECK(refusal("ls\rid").find("newline") != std::string::npos);
    CHECK(refusal(std::string_view("ls\0id", 5)).find("NUL") != std::string::npos);
    CHECK(refusal("echo 'open") == "unbalanced single quote");
    CHECK(refusal("echo \"open") == "unbalanced double quote");
    CHECK(refusal("echo x\\") == "a trailing backslash is not allowed");
    CHECK(refusal("") == "empty command");
    CHECK(refusal("  \t ") == "empty command");
}

TEST_CASE("executables resolve on PATH by absolute path and relative to a base directory to their real file") {
    rath::test::TempDir d;
    auto bin = d.path() / "bin";
    fs::create_directories(bin);
    {
        std::ofstream(bin / "tool") << "#!/bin/sh\n";
        std::ofstream(bin / "plain") << "data\n";
    }
    ::chmod((bin / "tool").c_str(), 0755);
    fs::create_symlink(bin / "tool", d.path() / "alias");
    fs::create_symlink("/bin/rm", d.path() / "rm");
    const std::string real_tool = fs::canonical(bin / "tool").string();
    const std::string real_rm = fs::canonical("/bin/rm").string();
    const std::string path = "relative/dir::" + bin.string();

    CHECK(resolve_executable("tool", path, std::nullopt) == real_tool);
    CHECK(resolve_executable("rm", "/usr/bin:/bin", std::nullopt) == real_rm);
    CHECK(resolve_executable("/bin/rm", "", std::nullopt) == real_rm);
    CHECK(resolve_executable("/usr/bin/../bin/rm", "", std::nullopt) == real_rm);
    CHECK(resolve_executable("./rm", "", d.path().string()) == real_rm);
    CHECK(resolve_executable("./alias", "", d.path().string()) == real_tool);
    CHECK(resolve_executable("bin/tool", "", d.path().string()) == real_tool);
    CHECK_FALSE(resolve_executable("./rm", "", std::nullopt));  // relative without a base
    CHECK_FALSE(resolve_executable("plain", path, std::nullopt));  // not executable
    CHECK_FALSE(resolve_executable("bin", d.path().string(), std::nullopt));  // a directory
    CHECK_FALSE(resolve_executable("no-such-tool", path, std::nullopt));
    CHECK_FALSE(resolve_executable("", path, std::nullopt));
}
