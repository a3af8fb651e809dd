#pragma once
/// Ports for the servers idemproof starts.

namespace idem {

/// A free TCP port on 127.0.0.1 (bind to port 0, read it, close).
int freePort();

/// A free port on 127.0.0.1 for a program that binds it itself later (an HTTP target's PORT): outside the
/// kernel's ephemeral range, so that no outgoing connection takes it meanwhile.
int freeListenPort();

/// A free port on 127.0.0.1 for a server that binds it seconds later (a RabbitMQ node boots for several
/// seconds): from a range of its own, 10000-19999, apart from the ephemeral range (where the proxies' listening
/// ports and every outgoing connection's source port come from) and from freeListenPort's (HTTP targets), so
/// that nothing idemproof starts meanwhile takes it.
int freeServerPort();

} // namespace idem
