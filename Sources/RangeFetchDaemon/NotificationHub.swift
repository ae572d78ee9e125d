import NIOCore
import NIOWebSocket
import Synchronization

/// The WebSocket connections listening for aria2's notifications (`aria2.onDownloadStart`, …),
/// and the sending of one to all of them. Thread-safe: the service sends from its actor.
public final class NotificationHub: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    public init() {}

    func add(_ channel: any Channel) {
        channels.withLock { $0[ObjectIdentifier(channel)] = channel }
    }

    func remove(_ channel: any Channel) {
        _ = channels.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    var count: Int { channels.withLock { $0.count } }

    /// Sends `{"jsonrpc":"2.0","method":METHOD,"params":[{"gid":GID}]}` to every listener.
    func send(_ method: String, gid: String) {
        let message = RPCMessage.encode(["jsonrpc": .string("2.0"), "method": .string(method),
                                         "params": .array([["gid": .string(gid)].json])].json)
        for channel in channels.withLock({ Array($0.values) }) {
            let frame = WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(bytes: message))
            channel.writeAndFlush(frame, promise: nil)
        }
    }
}

/// One WebSocket connection on `/jsonrpc`: each text message is a call (or a batch) answered
/// on the same connection, and the connection hears the notifications.
final class RPCWebSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let endpoint: RPCEndpoint
    private let hub: NotificationHub

    init(endpoint: RPCEndpoint, hub: NotificationHub) {
        self.endpoint = endpoint
        self.hub = hub
    }

    func handlerAdded(context: ChannelHandlerContext) {
        hub.add(context.channel)
    }

    func channelInactive(context: ChannelHandlerContext) {
        hub.remove(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            var payload = frame.unmaskedData
            let body = payload.readBytes(length: payload.readableBytes) ?? []
            let endpoint = self.endpoint, channel = context.channel
            if let (_, answer) = endpoint.answerAtOnce(body) {
                endpoint.inFlight.begin()
                channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(bytes: answer)))
                    .whenComplete { _ in endpoint.inFlight.end() }
                return
            }
            let promise = context.eventLoop.makePromise(of: (HTTPResponseStatusCode, [UInt8]).self)
            endpoint.inFlight.begin()
            promise.completeWithTask {
                let (status, answer) = await endpoint.answer(body)
                return (status.code, answer)
            }
            promise.futureResult.whenSuccess { _, answer in
                channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(bytes: answer)))
                    .whenComplete { _ in endpoint.inFlight.end() }
            }
        case .ping:
            var payload = frame.unmaskedData
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: payload.readSlice(length: payload.readableBytes) ?? ByteBuffer())
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(close)).whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
        default:
            break
        }
    }
}

typealias HTTPResponseStatusCode = UInt
