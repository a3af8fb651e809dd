// Boost.URL 1.81 has no compiled library in Debian: its sources are built here, once per program.
// Nothing else in idemproof may include <boost/url/src.hpp> (duplicate symbols); link idem_servers.
#include <boost/url/src.hpp>
