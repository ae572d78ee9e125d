import RangeFetchBase

/// What an object store or CDN says in an error body: S3, GCS's XML API, Azure and R2 answer
/// `<Error><Code>…</Code><Message>…</Message></Error>`. A pure parse of the body's start.
package struct StoreError: Equatable, Sendable {
    /// The machine-readable code, e.g. `ExpiredToken`, `AccessDenied`.
    package var code: String
    /// The sentence for people, when there is one.
    package var message: String?

    /// `nil` when the body carries no `<Code>` element.
    package init?(body: String) {
        guard let code = Self.element("Code", in: body), !code.isEmpty else { return nil }
        self.code = code
        message = Self.element("Message", in: body)
    }

    package init(code: String, message: String? = nil) {
        self.code = code
        self.message = message
    }

    /// `Code: Message`, or the code alone: what a warning or error quotes.
    package var summary: String { message.map { "\(code): \($0)" } ?? code }

    /// Codes that say a signed request expired (GCS `ExpiredToken`, Azure `AuthenticationFailed`,
    /// R2 `ExpiredRequest`, `RequestExpired`).
    private static let expiryCodes: Set<String> = ["ExpiredToken", "AuthenticationFailed", "ExpiredRequest", "RequestExpired"]

    /// The store says the signature or token expired: an expiry code, or a message that says so
    /// (S3's `AccessDenied` with "Request has expired").
    package var saysExpired: Bool {
        Self.expiryCodes.contains(code) || (message?.lowercased().contains("expired") ?? false)
    }

    /// The text of the first `<name>` element, at most 200 characters.
    private static func element(_ name: String, in text: String) -> String? {
        guard let open = text.firstRange(of: "<\(name)>"),
              let close = text[open.upperBound...].firstRange(of: "</\(name)>") else { return nil }
        return String(text[open.upperBound..<close.lowerBound].prefix(200))
    }
}
