// The JSONL SessionStore against the shared contract (session/store_contract.hpp), and
// that it writes exactly the files SessionWriter writes.
#include "session/store_contract.hpp"
#include "support/env.hpp"
#include "support/temp_dir.hpp"

#include <rath/session/persistence/loader.hpp>

#include <doctest/doctest.h>

#include <fstream>

namespace {

struct JsonlFixture {
    rath::test::TempDir dir;
    std::shared_ptr<rath::persistence::SessionStore> store =
        rath::persistence::make_jsonl_session_store({.dir = dir.path()});
};

}  // namespace

TEST_SUITE("session/persistence/store") {

TEST_CASE_TEMPLATE_INVOKE(store_contract_round_trip, JsonlFixture);
TEST_CASE_TEMPLATE_INVOKE(store_contract_abandon, JsonlFixture);
TEST_CASE_TEMPLATE_INVOKE(store_contract_index, JsonlFixture);
TEST_CASE_TEMPLATE_INVOKE(store_contract_catalog, JsonlFixture);
TEST_CASE_TEMPLATE_INVOKE(store_contract_reopen, JsonlFixture);

TEST_CASE("the JSONL store writes <dir>/<id>.jsonl, the file the loader reads") {
    using namespace rath::test::store_contract;
    JsonlFixture f;
    rath::Session s = rath::Session::from_user_message("on disk");
    run(write_session(f.store, s, tricky_rows(3), 2, false));
    auto path = f.dir.path() / (s.id() + ".jsonl");
    REQUIRE(std::filesystem::exists(path));
    auto p = rath::persistence::load_session_file(path);
    CHECK(p.chunks.size() == 4);
    CHECK(p.closed);
}

}  // TEST_SUITE
