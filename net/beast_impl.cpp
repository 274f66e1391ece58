// Beast's and Asio-SSL's separately compiled implementations, built once here
// (BOOST_BEAST_SEPARATE_COMPILATION is set on rath::net).
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
