rath_add_test_suite(net LABELS "net;tsan" TIMEOUT 300 LIBS ZLIB::ZLIB)
