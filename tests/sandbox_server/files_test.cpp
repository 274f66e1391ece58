#include "files.hpp"

#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace rath::sandbox_server;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string read_download(files::Root& root, const std::string& path, std::optional<std::string_view> range = std::nullopt) {
    auto d = root.open_download(path, range);
    std::string buf(d.length, '\0');
    REQUIRE(::pread(d.fd, buf.data(), buf.size(), static_cast<off_t>(d.offset)) == static_cast<ssize_t>(d.length));
    ::close(d.fd);
    return buf;
}

int status_of(auto&& f) {
    try {
        f();
    } catch (const ApiError& e) {
        return e.status;
    }
    return 0;
}

struct Fixture {
    rath::test::TempDir dir;
    files::Owner owner{static_cast<unsigned>(::geteuid()), static_cast<unsigned>(::getegid())};
    Fixture() { fs::create_directories(dir.path() / "workspace"); }
    files::Root root() { return files::Root(dir.path().string(), owner); }
};

}  // namespace

TEST_CASE("an upload creates its parents, takes the octal digits of mode, and reads back whole and by range") {
    Fixture f;
    auto r = f.root();
    r.write("/workspace/a/b/c.txt", "hello file", 640, "", "");
    CHECK(slurp(f.dir.path() / "workspace/a/b/c.txt") == "hello file");
    struct stat st {};
    REQUIRE(::stat((f.dir.path() / "workspace/a/b/c.txt").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0640);
    CHECK(read_download(r, "/workspace/a/b/c.txt") == "hello file");
    CHECK(read_download(r, "a/b/c.txt", "bytes=6-9") == "file");
    CHECK(read_download(r, "a/b/c.txt", "bytes=-4") == "file");
    CHECK(read_download(r, "a/b/c.txt", "bytes=6-") == "file");
    CHECK(status_of([&] { (void)r.open_download("a/b/c.txt", "bytes=10-"); }) == 416);
    CHECK(status_of([&] { (void)r.open_download("a/b/c.txt", "lines=1-2"); }) == 400);
    CHECK(status_of([&] { (void)r.open_download("missing", std::nullopt); }) == 404);
    CHECK(status_of([&] { r.write("x", "y", 8, "", ""); }) == 400);  // 8 is not an octal digit
}

TEST_CASE("info reports type, size, mode digits and owner; a missing path is FILE_NOT_FOUND") {
    Fixture f;
    auto r = f.root();
    r.write("/workspace/f", "12345", 0, "", "");
    r.make_dirs("/workspace/d/e", 750, "", "");
    auto info = r.info({"/workspace/f", "d/e"});
    CHECK(info.at("/workspace/f").at("size").as_int64() == 5);
    CHECK(info.at("/workspace/f").at("mode").as_int64() == 644);
    CHECK(info.at("/workspace/f").at("type").as_string() == "file");
    CHECK(info.at("d/e").at("type").as_string() == "directory");
    CHECK(info.at("d/e").at("mode").as_int64() == 750);
    CHECK(info.at("d/e").at("path").as_string() == "/workspace/d/e");
    try {
        (void)r.info({"/workspace/nope"});
        FAIL("expected 404");
    } catch (const ApiError& e) {
        CHECK(e.status == 404);
        CHECK(e.code == files::codes::file_not_found);
    }
}

TEST_CASE("paths resolve inside the root: '..', absolute symlinks and symlinks to host files stay in the sandbox") {
    Fixture f;
    auto r = f.root();
    r.write("/../../escaped.txt", "inside", 0, "", "");
    CHECK(fs::exists(f.dir.path() / "escaped.txt"));
    // A link to a host path is read as that path inside the root, which does not exist there.
    fs::create_symlink("/etc/hostname", f.dir.path() / "workspace/link");
    CHECK(status_of([&] { (void)r.open_download("/workspace/link", std::nullopt); }) == 404);
    fs::create_directories(f.dir.path() / "etc");
    std::ofstream(f.dir.path() / "etc/hostname") << "sandbox-host\n";
    CHECK(read_download(r, "/workspace/link") == "sandbox-host\n");
    // Writing through a link lands on the link's target inside the root, never outside.
    fs::create_directories(f.dir.path() / "tmp");
    std::ofstream(f.dir.path() / "tmp/rath-sbx-target") << "old";
    fs::create_symlink("/tmp/rath-sbx-target", f.dir.path() / "workspace/out");
    r.write("/workspace/out", "new", 0, "", "");
    CHECK(slurp(f.dir.path() / "tmp/rath-sbx-target") == "new");
    CHECK_FALSE(fs::exists("/tmp/rath-sbx-target"));
}

TEST_CASE("search matches file names by glob below a directory, in path order, directories left out") {
    Fixture f;
    auto r = f.root();
    for (auto p : {"/workspace/a.txt", "/workspace/sub/b.txt", "/workspace/sub/c.md", "/workspace/sub/deeper/d.txt"}) r.write(p, "x", 0, "", "");
    auto found = r.search("/workspace", "*.txt");
    std::vector<std::string> paths;
    for (auto& v : found) paths.emplace_back(v.as_object().at("path").as_string());
    CHECK(paths == std::vector<std::string>{"/workspace/a.txt", "/workspace/sub/b.txt", "/workspace/sub/deeper/d.txt"});
    CHECK(r.search("/workspace", "").size() == 4);
    CHECK(status_of([&] { (void)r.search("/workspace/none", "*"); }) == 404);
}

TEST_CASE("a listing goes to the requested depth in name order and refuses a symlinked directory") {
    Fixture f;
    auto r = f.root();
    r.write("/workspace/b/x", "1", 0, "", "");
    r.write("/workspace/a", "1", 0, "", "");
    std::vector<std::string> one, two;
    for (auto& v : r.list("/workspace", 1)) one.emplace_back(v.as_object().at("path").as_string());
    for (auto& v : r.list("/workspace", 2)) two.emplace_back(v.as_object().at("path").as_string());
    CHECK(one == std::vector<std::string>{"/workspace/a", "/workspace/b"});
    CHECK(two == std::vector<std::string>{"/workspace/a", "/workspace/b", "/workspace/b/x"});
    fs::create_directory_symlink("b", f.dir.path() / "workspace/lnk");
    CHECK(status_of([&] { (void)r.list("/workspace/lnk", 1); }) == 400);
}

TEST_CASE("move never replaces, replace counts occurrences, removal of files and trees") {
    Fixture f;
    auto r = f.root();
    r.write("/workspace/a", "one two one", 0, "", "");
    r.write("/workspace/b", "b", 0, "", "");
    CHECK(status_of([&] { r.move("/workspace/a", "/workspace/b"); }) == 400);
    r.move("/workspace/a", "/workspace/new/dir/a");
    CHECK(slurp(f.dir.path() / "workspace/new/dir/a") == "one two one");
    CHECK(r.replace("/workspace/new/dir/a", "one", "1") == 2);
    CHECK(slurp(f.dir.path() / "workspace/new/dir/a") == "1 two 1");
    CHECK(r.replace("/workspace/new/dir/a", "zzz", "y") == 0);
    CHECK(status_of([&] { (void)r.replace("/workspace/new/dir/a", "", "y"); }) == 400);
    CHECK(status_of([&] { r.remove_files({"/workspace/new"}); }) == 500);  // a directory
    r.remove_files({"/workspace/b", "/workspace/never-there"});
    CHECK_FALSE(fs::exists(f.dir.path() / "workspace/b"));
    r.remove_dirs({"/workspace/new", "/workspace/never-there"});
    CHECK_FALSE(fs::exists(f.dir.path() / "workspace/new"));
}

TEST_CASE("mode digits convert both ways and 8 or 9 is no octal digit") {
    CHECK(files::mode_from_digits(755) == 0755u);
    CHECK(files::mode_from_digits(644) == 0644u);
    CHECK(files::mode_from_digits(4755) == 04755u);
    CHECK_FALSE(files::mode_from_digits(789).has_value());
    CHECK(files::mode_to_digits(0750) == 750);
    CHECK(files::mode_to_digits(0) == 0);
}

TEST_CASE("a multipart body splits into its named parts, binary data intact") {
    const std::string body = std::string("--XyZ\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
                                         "Content-Type: application/json\r\n\r\n{\"path\":\"/workspace/f\",\"mode\":644}\r\n"
                                         "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n"
                                         "Content-Type: application/octet-stream\r\n\r\n") +
                             std::string("\0\r\n--X\xff", 7) + "\r\n--XyZ--\r\n";
    CHECK(files::multipart_boundary("multipart/form-data; boundary=XyZ") == "XyZ");
    CHECK(files::multipart_boundary("multipart/form-data; boundary=\"a b\"; charset=x") == "a b");
    CHECK_FALSE(files::multipart_boundary("application/json").has_value());
    auto parts = files::parse_multipart(body, "XyZ");
    REQUIRE(parts.size() == 2);
    CHECK(parts[0].name == "metadata");
    CHECK(parts[0].data == R"({"path":"/workspace/f","mode":644})");
    CHECK(parts[1].name == "file");
    CHECK(parts[1].filename == "f");
    CHECK(parts[1].data == std::string_view("\0\r\n--X\xff", 7));
    CHECK_THROWS_AS((void)files::parse_multipart("--XyZ\r\nno end", "XyZ"), ApiError);
}
