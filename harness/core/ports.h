#pragma once
/// Ports for the servers idemproof starts.

namespace idem {

/// A free TCP port on 127.0.0.1 (bind to port 0, read it, close).
int freePort();

/// A free port on 127.0.0.1 for a program that binds it itself later (an HTTP target's PORT, an embedded
/// server: PostgreSQL, Valkey, nats-server, a RabbitMQ node): outside the kernel's ephemeral range, so that
/// no outgoing connection and no proxy (which binds port 0) takes it meanwhile — not while a RabbitMQ node
/// boots for seconds, not while a server restarts on its port.
int freeListenPort();

} // namespace idem
