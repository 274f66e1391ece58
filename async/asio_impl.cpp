// Asio's separately compiled implementation: built once here instead of in every
// translation unit (BOOST_ASIO_SEPARATE_COMPILATION is set on rath::async).
#include <boost/asio/impl/src.hpp>
