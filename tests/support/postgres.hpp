#pragma once
// A private PostgreSQL server for one test binary: `initdb` in a fresh temp directory,
// `pg_ctl start` listening on a private unix-socket directory and on a free TCP port of
// 127.0.0.1, stopped and removed when the object goes (also when a test fails).
//
// Root: PostgreSQL refuses to run as root, and CI runs the tests as root. Then initdb,
// pg_ctl and the server run as the `postgres` user (Debian's postgresql-common creates
// it), else as `nobody`, in a directory that user owns: the child drops to that user
// with setgroups/setgid/setuid between fork and exec.
//
// A crashed or killed test binary leaves nothing behind: a guardian (/bin/sh, started
// with a pipe whose write end only this process holds) sees the pipe close when the
// test process ends for whatever reason, then stops the server with SIGQUIT
// (immediate shutdown) and removes the directory. The destructor uses the same path:
// it closes the pipe and waits for the guardian.
//
// Missing binaries: PostgresServer::unavailable_reason() says why; require_postgres()
// turns that into a doctest FAIL under RATH_CI and a SKIP message elsewhere.

#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rath::test {

class PostgresServer {
public:
    // The directory holding initdb, pg_ctl and postgres: $RATH_PG_BINDIR, else Debian's
    // /usr/lib/postgresql/<major>/bin (newest first), else empty.
    static std::filesystem::path bindir() {
        auto has_all = [](const std::filesystem::path& d) {
            for (const char* b : {"initdb", "pg_ctl", "postgres"})
                if (::access((d / b).c_str(), X_OK) != 0) return false;
            return true;
        };
        if (const char* env = std::getenv("RATH_PG_BINDIR"); env && *env) return has_all(env) ? env : "";
        for (int major = 17; major >= 13; --major) {
            std::filesystem::path d = "/usr/lib/postgresql/" + std::to_string(major) + "/bin";
            if (has_all(d)) return d;
        }
        return {};
    }

    // "" when a server can be started here, else why not.
    static std::string unavailable_reason() {
        if (bindir().empty())
            return "PostgreSQL server binaries (initdb, pg_ctl, postgres) are missing: install postgresql-15 "
                   "(scripts/install-deps.sh --test) or set RATH_PG_BINDIR";
        if (::geteuid() == 0 && !run_as_user()) return "running as root and neither user postgres nor nobody exists";
        return {};
    }

    // Starts the server; throws std::runtime_error with initdb's or the server's log
    // when it does not come up within 60 s. `fsync` off (the default) trades crash
    // durability of the throwaway cluster for test speed.
    // `extra_listen`: addresses to listen on besides 127.0.0.1 (comma-separated; they
    // must exist on this host), for clients in other network namespaces; clients from
    // those addresses' subnets are trusted like local ones.
    explicit PostgresServer(bool fsync = false, const std::string& extra_listen = {}) {
        if (auto why = unavailable_reason(); !why.empty()) throw std::runtime_error(why);
        const std::filesystem::path bin = bindir();
        // /tmp, not $TMPDIR, when dropping privileges: the server user must be able
        // to reach the directory, and a root-only TMPDIR (under /root) would not let it.
        std::filesystem::path base = ::geteuid() == 0 ? std::filesystem::path("/tmp")
                                                      : std::filesystem::temp_directory_path();
        std::string pattern = (base / "rath-pg-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
        root_ = pattern;
        data_ = root_ / "data";
        log_ = root_ / "server.log";
        if (::geteuid() == 0) {
            user_ = run_as_user();
            if (::chown(root_.c_str(), user_->uid, user_->gid) != 0)
                throw_cleanup("chown " + root_.string() + ": " + std::strerror(errno));
        }
        port_ = free_port();
        start_guardian();

        std::string initdb_out = root_.string() + "/initdb.log";
        int rc = run({(bin / "initdb").string(), "-D", data_.string(), "-U", std::string(superuser), "--auth=trust",
                      "-E", "UTF8", "--locale=C", "--no-sync"},
                     initdb_out);
        if (rc != 0) throw_cleanup("initdb failed (exit " + std::to_string(rc) + "):\n" + slurp(initdb_out));

        if (!extra_listen.empty()) {
            // Clients on those addresses' subnets (other network namespaces) get in as
            // local ones do.
            std::ofstream hba(data_ / "pg_hba.conf", std::ios::app);
            hba << "host all all samenet trust\n";
            if (!hba) throw_cleanup("cannot append to " + (data_ / "pg_hba.conf").string());
        }
        opts_ = "-k " + root_.string() + " -p " + std::to_string(port_) + " -c listen_addresses=127.0.0.1" +
                (extra_listen.empty() ? "" : "," + extra_listen) + " -c max_connections=200" +
                (fsync ? "" : " -c fsync=off -c synchronous_commit=off -c full_page_writes=off");
        try {
            start();
        } catch (const std::exception& e) {
            throw_cleanup(e.what());
        }
    }

    ~PostgresServer() { teardown(); }
    PostgresServer(const PostgresServer&) = delete;
    PostgresServer& operator=(const PostgresServer&) = delete;

    static constexpr const char* superuser = "rath";

    int port() const noexcept { return port_; }
    const std::filesystem::path& socket_dir() const noexcept { return root_; }
    // A libpq connection string over TCP (127.0.0.1:port), database `postgres`.
    std::string conninfo(const std::string& dbname = "postgres") const {
        return "host=127.0.0.1 port=" + std::to_string(port_) + " user=" + superuser + " dbname=" + dbname +
               " connect_timeout=10";
    }
    // The same over the private unix socket.
    std::string socket_conninfo(const std::string& dbname = "postgres") const {
        return "host=" + root_.string() + " port=" + std::to_string(port_) + " user=" + superuser +
               " dbname=" + dbname;
    }
    // The server's log so far (for failure messages).
    std::string log() const { return slurp(log_); }

    // Stops the server (fast shutdown: sessions are disconnected) and starts it again
    // on the same port and data: what a database restart looks like to clients.
    void restart() {
        const std::filesystem::path bin = bindir();
        int rc = run({(bin / "pg_ctl").string(), "-D", data_.string(), "-l", log_.string(), "-w", "-t", "60", "-m",
                      "fast", "restart"},
                     root_.string() + "/pg_ctl.log");
        if (rc != 0) throw std::runtime_error("pg_ctl restart failed:\n" + slurp(root_ / "pg_ctl.log") + "\n" + log());
    }

    // Stops the server (fast shutdown: sessions are disconnected, a checkpoint is
    // written) and waits until it is gone; start() brings it back on the same data
    // directory and port. Between the two, clients find nothing listening.
    void stop() {
        const std::filesystem::path bin = bindir();
        int rc = run({(bin / "pg_ctl").string(), "-D", data_.string(), "-w", "-t", "60", "-m", "fast", "stop"},
                     root_.string() + "/pg_ctl.log");
        if (rc != 0) throw std::runtime_error("pg_ctl stop failed:\n" + slurp(root_ / "pg_ctl.log") + "\n" + log());
    }
    void start() {
        const std::filesystem::path bin = bindir();
        int rc = run({(bin / "pg_ctl").string(), "-D", data_.string(), "-l", log_.string(), "-w", "-t", "60", "-o",
                      opts_, "start"},
                     root_.string() + "/pg_ctl.log");
        if (rc != 0)
            throw std::runtime_error("pg_ctl start failed (exit " + std::to_string(rc) + "):\n" +
                                     slurp(root_ / "pg_ctl.log") + "\n" + slurp(log_));
    }

private:
    struct User {
        uid_t uid;
        gid_t gid;
    };

    static std::optional<User> run_as_user() {
        for (const char* name : {"postgres", "nobody"}) {
            if (const passwd* pw = ::getpwnam(name)) return User{pw->pw_uid, pw->pw_gid};
        }
        return std::nullopt;
    }

    static int free_port() {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) throw std::runtime_error("socket failed");
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
            ::close(fd);
            throw std::runtime_error("cannot find a free port");
        }
        ::close(fd);
        return ntohs(a.sin_port);
    }

    static std::string slurp(const std::filesystem::path& p) {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    // Runs argv (as the server user when root) with stdout and stderr into out_file;
    // returns the exit status. Between fork and exec only async-signal-safe calls.
    int run(const std::vector<std::string>& argv, const std::string& out_file) const {
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out < 0) throw std::runtime_error("cannot open " + out_file);
        if (user_) (void)::fchown(out, user_->uid, user_->gid);
        pid_t pid = ::fork();
        if (pid < 0) {
            ::close(out);
            throw std::runtime_error("fork failed");
        }
        if (pid == 0) {
            ::dup2(out, 1);
            ::dup2(out, 2);
            int devnull = ::open("/dev/null", O_RDONLY);
            if (devnull >= 0) ::dup2(devnull, 0);
            ::close_range(3, ~0U, 0);
            if (user_) {
                if (::setgroups(0, nullptr) != 0 || ::setgid(user_->gid) != 0 || ::setuid(user_->uid) != 0) _exit(126);
            }
            ::execv(args[0], args.data());
            _exit(127);
        }
        ::close(out);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

    // The guardian: /bin/sh reading its stdin (the pipe) until EOF, then stopping the
    // postmaster named in postmaster.pid with SIGQUIT, waiting for it, and removing
    // the directory. Runs as the invoking user (root can signal the server).
    void start_guardian() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) throw_cleanup("pipe2 failed");
        const std::string script =
            "cat >/dev/null; "
            "pidfile=\"$1/data/postmaster.pid\"; "
            "if [ -f \"$pidfile\" ]; then pid=$(head -n1 \"$pidfile\"); "
            "  kill -QUIT \"$pid\" 2>/dev/null; "
            "  i=0; while kill -0 \"$pid\" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.02; i=$((i+1)); done; "
            "  kill -KILL \"$pid\" 2>/dev/null; fi; "
            "rm -rf \"$1\"";
        std::string root = root_.string();
        pid_t pid = ::fork();
        if (pid < 0) {
            ::close(fds[0]);
            ::close(fds[1]);
            throw_cleanup("fork failed");
        }
        if (pid == 0) {
            ::dup2(fds[0], 0);  // dup2 clears close-on-exec on 0
            int devnull = ::open("/dev/null", O_WRONLY);
            if (devnull >= 0) {
                ::dup2(devnull, 1);
                ::dup2(devnull, 2);
            }
            ::close_range(3, ~0U, 0);
            // Its own process group: a Ctrl-C meant for the tests must not kill the
            // guardian before it has cleaned up.
            ::setpgid(0, 0);
            ::execl("/bin/sh", "sh", "-c", script.c_str(), "rath-pg-guardian", root.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        ::close(fds[0]);
        guardian_pid_ = pid;
        guardian_fd_ = fds[1];
    }

    void teardown() noexcept {
        if (guardian_fd_ >= 0) {
            ::close(guardian_fd_);
            guardian_fd_ = -1;
        }
        if (guardian_pid_ > 0) {
            int status = 0;
            while (::waitpid(guardian_pid_, &status, 0) < 0 && errno == EINTR) {
            }
            guardian_pid_ = -1;
        } else if (!root_.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(root_, ec);
        }
    }

    [[noreturn]] void throw_cleanup(const std::string& what) {
        teardown();
        throw std::runtime_error(what);
    }

    std::filesystem::path root_, data_, log_;
    std::string opts_;  // the server's options (pg_ctl -o)
    std::optional<User> user_;
    int port_ = 0;
    pid_t guardian_pid_ = -1;
    int guardian_fd_ = -1;
};

// For a test case: true when a server can be started. Under RATH_CI a missing
// PostgreSQL fails the case; elsewhere the case says SKIP and passes.
#define RATH_REQUIRE_POSTGRES()                                                                  \
    [] {                                                                                         \
        std::string why_ = ::rath::test::PostgresServer::unavailable_reason();                   \
        if (why_.empty()) return true;                                                           \
        if (std::getenv("RATH_CI")) FAIL("PostgreSQL is required under RATH_CI: " << why_);      \
        MESSAGE("SKIP: " << why_);                                                               \
        return false;                                                                            \
    }()

}  // namespace rath::test
