#pragma once
/// Ports for the servers idemproof starts.

namespace idem {

/// A free TCP port on 127.0.0.1 (bind to port 0, read it, close).
int freePort();

} // namespace idem
