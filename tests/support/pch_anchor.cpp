// The translation unit that owns the tests' precompiled header.
namespace rath::test {
int pch_anchor() { return 0; }
}  // namespace rath::test
