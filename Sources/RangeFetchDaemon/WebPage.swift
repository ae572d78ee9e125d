import NIOCore
import NIOHTTP1

/// The daemon's web page (`GET /`, `GET /index.html`): `WebPage/index.html`, one file with its
/// style and script inline, compiled into the binary. It calls `/jsonrpc` of its own origin with
/// the token the user types, so it needs nothing the guard does not already allow.
enum WebPage {
    /// The page's bytes, as SwiftPM embedded them.
    static let bytes: [UInt8] = PackageResources.index_html

    /// The paths it is served at.
    static func serves(_ path: String) -> Bool { path == "/" || path == "/index.html" }

    /// What the browser may do with the page: nothing from elsewhere (no script, style, image
    /// or frame from another origin), calls only to its own origin (the WebSocket included), and
    /// it may not be framed (clickjacking). Inline script and style are its own, with no server
    /// text ever parsed as HTML.
    static let contentSecurityPolicy = [
        "default-src 'none'",
        "script-src 'unsafe-inline'",
        "style-src 'unsafe-inline'",
        "connect-src 'self' ws://127.0.0.1:* ws://localhost:*",
        "img-src 'self'",
        "form-action 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ].joined(separator: "; ")

    static var headers: HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
        headers.add(name: "Content-Length", value: String(bytes.count))
        headers.add(name: "Cache-Control", value: "no-cache")
        headers.add(name: "Content-Security-Policy", value: contentSecurityPolicy)
        headers.add(name: "X-Frame-Options", value: "DENY")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        return headers
    }
}

extension RPCHandler {
    /// Answers a GET of the page (a HEAD gets the headers only).
    func sendWebPage(_ context: ChannelHandlerContext, keepAlive: Bool, headOnly: Bool) {
        var headers = WebPage.headers
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        if !headOnly {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: WebPage.bytes)))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive { done.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) } }
    }
}
