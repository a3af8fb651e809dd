#pragma once
/// Ports for the servers idemproof starts.

namespace idem {

/// A free TCP port on 127.0.0.1 (bind to port 0, read it, close).
int freePort();

/// A free port on 127.0.0.1 for a program that binds it itself later (an HTTP target's PORT): outside the
/// kernel's ephemeral range, so that no outgoing connection takes it meanwhile.
int freeListenPort();

} // namespace idem
