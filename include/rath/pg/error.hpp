#pragma once
// Errors of rath's PostgreSQL client (rath::pg, built when libpq is found).
#include <rath/error.hpp>

#include <string>

namespace rath::pg {

// What went wrong, so that callers can tell "retry later" from "fix the SQL".
enum class ErrorKind {
    connect,          // no connection could be made (server down, bad conninfo, auth)
    connection_lost,  // the connection broke with the request sent: it may or may not
                      // have been committed; the next request reconnects
    query,            // the server rejected a statement (syntax, constraint, ...):
                      // the request's transaction was rolled back
};

class PgError : public Error {
public:
    PgError(ErrorKind kind, std::string sqlstate, const std::string& message)
        : Error(message), kind_(kind), sqlstate_(std::move(sqlstate)) {}
    [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }
    // The five-character SQLSTATE the server sent ("42601" syntax error, "23505"
    // unique violation, "57P01" admin shutdown, ...); "" when the error came from the
    // client side (a refused connection, a dropped socket).
    [[nodiscard]] const std::string& sqlstate() const noexcept { return sqlstate_; }

private:
    ErrorKind kind_;
    std::string sqlstate_;
};

}  // namespace rath::pg
