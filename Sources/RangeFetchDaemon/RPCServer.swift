import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// The daemon's HTTP face on SwiftNIO: `POST /jsonrpc` (one call or a batch) answered by an
/// ``Aria2Service``, behind a ``RequestGuard`` (Host and Origin) and a body size limit.
public final class RPCServer: Sendable {
    /// Bodies larger than this are refused with 413 before they are read.
    static let maximumBodyBytes = 2 << 20
    /// An HTTP connection that sends nothing for this long is closed.
    static let idleTimeout = TimeAmount.seconds(60)

    private let channel: any Channel
    private let inFlight: AnswersInFlight
    /// The port it listens on (the one given, or the one the system chose for 0).
    public let port: Int

    /// Listens on `host`:`port` (0: any free port), on the event loop `service` runs on (which
    /// its owner shuts down after the service's last call).
    public init(host: String, port: Int, service: Aria2Service, token: String?, allowOriginAll: Bool,
                notifications: NotificationHub) async throws {
        let guardRule = RequestGuard(listenAddress: host, secretSet: token != nil, allowOriginAll: allowOriginAll)
        let endpoint = RPCEndpoint(service: service, token: RPCToken(secret: token))
        inFlight = endpoint.inFlight
        channel = try await ServerBootstrap(group: service.eventLoop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    // GET /jsonrpc with an upgrade becomes a WebSocket, behind the same guard;
                    // the HTTP handler goes once it has.
                    let upgrader = NIOWebSocketServerUpgrader(
                        maxFrameSize: RPCServer.maximumBodyBytes, automaticErrorHandling: true,
                        shouldUpgrade: { channel, head in
                            let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
                            let verdict = guardRule.check(host: head.headers.first(name: "host"), origin: head.headers.first(name: "origin"))
                            guard path == "/jsonrpc", case .allowed = verdict else { return channel.eventLoop.makeSucceededFuture(nil) }
                            return channel.eventLoop.makeSucceededFuture(HTTPHeaders())
                        },
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(
                                    NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64,
                                                                maxAccumulatedFrameSize: RPCServer.maximumBodyBytes))
                                try channel.pipeline.syncOperations.addHandler(RPCWebSocketHandler(endpoint: endpoint, hub: notifications))
                            }
                        })
                    // A connection that sends nothing for a minute is closed (slowloris, leaked
                    // keep-alives); a WebSocket may stay quiet, so it drops the rule.
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: RPCServer.idleTimeout), name: "idle")
                    try channel.pipeline.syncOperations.addHandler(IdleConnectionCloser(), name: "idle-close")
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                            context.pipeline.syncOperations.removeHandler(name: "rpc-http", promise: nil)
                            context.pipeline.syncOperations.removeHandler(name: "idle", promise: nil)
                            context.pipeline.syncOperations.removeHandler(name: "idle-close", promise: nil)
                        }),
                        withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(RPCHandler(guardRule: guardRule, endpoint: endpoint), name: "rpc-http")
                }
            }
            .bind(host: host, port: port).get()
        self.port = channel.localAddress?.port ?? port
    }

    /// Returns once the server is closed (``close()``) and the calls read before were answered
    /// (`aria2.shutdown`'s own answer among them).
    public func run() async {
        try? await channel.closeFuture.get()
        await inFlight.drained(within: .seconds(10))
    }

    public func close() {
        channel.close(promise: nil)
    }
}

/// What the handler hands a body to: the token check and the service, off the event loop.
struct RPCEndpoint: Sendable {
    let service: Aria2Service
    let token: RPCToken
    let inFlight = AnswersInFlight()

    /// The answer to `body` and its HTTP status (400 when a single call's token is wrong).
    func answer(_ body: [UInt8]) async -> (status: HTTPResponseStatus, body: [UInt8]) {
        let (elements, batch) = RPCMessage.parse(body)
        var answers: [JSON] = []
        var unauthorized = false
        for element in elements {
            switch element {
            case .failure(let bad):
                answers.append(RPCMessage.answer(id: bad.id, .failure(bad.failure)))
            case .success(let call):
                let outcome = await run(call)
                if case .failure(let failure) = outcome, failure == .unauthorized { unauthorized = true }
                answers.append(RPCMessage.answer(id: call.id, outcome))
            }
        }
        let status: HTTPResponseStatus = !batch && unauthorized ? .badRequest : .ok
        return (status, RPCMessage.encode(batch ? .array(answers) : answers[0]))
    }

    /// The answer to `body` now, when it is one call that needs no waiting and this runs on the
    /// service's event loop (where the handlers run): no hop to another thread, which under a
    /// CPU saturated by downloads costs milliseconds each. `nil`: answer it with ``answer(_:)``.
    func answerAtOnce(_ body: [UInt8]) -> (status: HTTPResponseStatus, body: [UInt8])? {
        guard service.eventLoop.inEventLoop else { return nil }
        let (elements, batch) = RPCMessage.parse(body)
        guard !batch, elements.count == 1, case .success(let call) = elements[0], Aria2Service.answersAtOnce(call.method) else {
            return nil
        }
        let outcome: Result<JSON, RPCFailure>
        if let params = authorized(call) {
            outcome = service.assumeIsolated { service in
                Result { () throws(RPCFailure) -> JSON in try service.callAtOnce(call.method, params) }
            }
        } else {
            outcome = .failure(.unauthorized)
        }
        let status: HTTPResponseStatus = outcome == .failure(.unauthorized) ? .badRequest : .ok
        return (status, RPCMessage.encode(RPCMessage.answer(id: call.id, outcome)))
    }

    /// The call's parameters without its token; `nil` when the token is wrong. The two
    /// listings need no token, as in aria2.
    private func authorized(_ call: RPCCall) -> [JSON]? {
        let open = call.method == "system.listMethods" || call.method == "system.listNotifications"
        return token.check(call.params) ?? (open ? call.params : nil)
    }

    private func run(_ call: RPCCall) async -> Result<JSON, RPCFailure> {
        if call.method == "system.multicall" { return await multicall(call) }
        guard let params = authorized(call) else { return .failure(.unauthorized) }
        do throws(RPCFailure) {
            return .success(try await service.call(call.method, params))
        } catch {
            return .failure(error)
        }
    }

    /// `system.multicall([{methodName, params}, …])`: each result wrapped in an array, each
    /// failure an error object, in order.
    private func multicall(_ call: RPCCall) async -> Result<JSON, RPCFailure> {
        guard let calls = call.params.first?.array else { return .failure(RPCFailure("system.multicall takes an array of calls")) }
        var results: [JSON] = []
        for item in calls {
            guard let object = item.object, let method = object["methodName"]?.string, method != "system.multicall" else {
                results.append(["code": .number(1), "message": .string("each call needs a methodName")].json)
                continue
            }
            let inner = RPCCall(id: .null, method: method, params: object["params"]?.array ?? [])
            switch await run(inner) {
            case .success(let result): results.append(.array([result]))
            case .failure(let failure): results.append(["code": .number(Double(failure.code)), "message": .string(failure.message)].json)
            }
        }
        return .success(.array(results))
    }
}

/// One connection's requests: collected up to the size limit, checked, answered in order.
final class RPCHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let guardRule: RequestGuard
    private let endpoint: RPCEndpoint
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var refused = false

    init(guardRule: RequestGuard, endpoint: RPCEndpoint) {
        self.guardRule = guardRule
        self.endpoint = endpoint
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
            body = []
            refused = false
            if let length = request.headers.first(name: "content-length").flatMap(Int.init), length > RPCServer.maximumBodyBytes {
                refuse(context, .payloadTooLarge, "request bodies are limited to \(RPCServer.maximumBodyBytes) bytes")
            }
        case .body(var chunk):
            guard !refused else { return }
            if body.count + chunk.readableBytes > RPCServer.maximumBodyBytes {
                refuse(context, .payloadTooLarge, "request bodies are limited to \(RPCServer.maximumBodyBytes) bytes")
                return
            }
            body += chunk.readBytes(length: chunk.readableBytes) ?? []
        case .end:
            guard !refused, let request = head else { return }
            respond(context, to: request)
        }
    }

    private func respond(_ context: ChannelHandlerContext, to request: HTTPRequestHead) {
        let verdict = guardRule.check(host: request.headers.first(name: "host"), origin: request.headers.first(name: "origin"))
        guard case .allowed(let corsOrigin) = verdict else {
            if case .refused(let reason) = verdict { send(context, .forbidden, Array(reason.utf8), cors: nil, keepAlive: false) }
            return
        }
        let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
        switch (request.method, path) {
        case (.GET, _) where WebPage.serves(path), (.HEAD, _) where WebPage.serves(path):
            sendWebPage(context, keepAlive: request.isKeepAlive, headOnly: request.method == .HEAD)
        case (.OPTIONS, _):
            send(context, .noContent, [], cors: corsOrigin, keepAlive: request.isKeepAlive, preflight: true)
        case (.POST, "/jsonrpc"):
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let endpoint = self.endpoint, body = self.body, keepAlive = request.isKeepAlive
            if let (status, answer) = endpoint.answerAtOnce(body) {
                // Counted too: `aria2.shutdown` answered here has closed the server already.
                endpoint.inFlight.begin()
                send(context, status, answer, cors: corsOrigin, keepAlive: keepAlive, json: true)
                    .whenComplete { _ in endpoint.inFlight.end() }
                return
            }
            let promise = context.eventLoop.makePromise(of: (HTTPResponseStatus, [UInt8]).self)
            endpoint.inFlight.begin()
            promise.completeWithTask { await endpoint.answer(body) }
            promise.futureResult.whenSuccess { status, answer in
                let (handler, context) = loopBound.value
                handler.send(context, status, answer, cors: corsOrigin, keepAlive: keepAlive, json: true)
                    .whenComplete { _ in endpoint.inFlight.end() }
            }
        default:
            send(context, .notFound, Array("rangefetch daemon: POST JSON-RPC calls to /jsonrpc\n".utf8), cors: corsOrigin,
                 keepAlive: request.isKeepAlive)
        }
    }

    private func refuse(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ message: String) {
        refused = true
        send(context, status, Array(message.utf8), cors: nil, keepAlive: false)
    }

    /// Writes one response; its future completes once the response is flushed (or failed).
    @discardableResult
    private func send(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ body: [UInt8], cors: String?,
                      keepAlive: Bool, json: Bool = false, preflight: Bool = false) -> EventLoopFuture<Void> {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: json ? "application/json-rpc" : "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: String(body.count))
        headers.add(name: "Cache-Control", value: "no-cache")
        if let cors {
            headers.add(name: "Access-Control-Allow-Origin", value: cors)
            headers.add(name: "Vary", value: "Origin")
            if preflight {
                headers.add(name: "Access-Control-Allow-Methods", value: "POST, GET, OPTIONS")
                headers.add(name: "Access-Control-Allow-Headers", value: "Content-Type")
                headers.add(name: "Access-Control-Max-Age", value: "1728000")
            }
        }
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive { done.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) } }
        return done
    }
}

/// Closes a connection when ``IdleStateHandler`` says it has read nothing for a while.
final class IdleConnectionCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
