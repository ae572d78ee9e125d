/// What a journal knows a download by: the user's URL without what a signed URL changes each time
/// it is signed, written redacted (``url``), and a digest of it when the redaction hid a value
/// (``digest``), so two URLs that differ only in a secret are two downloads while no secret
/// reaches the disk.
///
/// A presigned link signed again (another `X-Amz-Date`, `X-Amz-Signature`, expiry) names the same
/// download: a partial file resumes under the fresh link (the probe's size and validators still
/// have to match the journal's). The parameters left out are a signing scheme's own, and only
/// when its signature is in the query:
///
/// | scheme (present) | left out (any case) |
/// |---|---|
/// | SigV4 (`X-Amz-Signature`) | `X-Amz-Algorithm`, `-Credential`, `-Date`, `-Expires`, `-SignedHeaders`, `-Signature`, `-Security-Token` |
/// | GCS V4 (`X-Goog-Signature`) | `X-Goog-Algorithm`, `-Credential`, `-Date`, `-Expires`, `-SignedHeaders`, `-Signature` |
/// | S3 SigV2, GCS V2, CloudFront (`Signature`) | `Signature`, `Expires`, `AWSAccessKeyId`, `GoogleAccessId`, `Policy`, `Key-Pair-Id`, `X-Amz-Security-Token` |
/// | Azure SAS (`sig`) | `sig`, `se`, `st`, `sv`, `sp`, `spr`, `sr`, `ss`, `srt`, `si`, `sdd`, `ses`, `skoid`, `sktid`, `skt`, `ske`, `sks`, `skv`, `saoid`, `suoid`, `scid` |
///
/// | URL | ``url`` | ``digest`` |
/// |---|---|---|
/// | `https://h/f?id=1` | `https://h/f?id=1` | `nil` |
/// | `https://h/f?id=1&X-Amz-Date=…&X-Amz-Signature=…` | `https://h/f?id=1` | `nil` |
/// | `https://h/f?code=A`, `https://h/f?code=B` | `https://h/f?code=REDACTED` | SHA-256 of each URL: they differ |
/// | `https://u:pw@h/f` | `https://u:REDACTED@h/f` | SHA-256 of the URL |
/// | `s3://b/k` | `s3://b/k` | `nil` |
///
/// The digest is of the URL as it stands without those parameters, secret values included; a
/// guessable secret (a short password in `user:pass@`) could be found again from it by trying
/// candidates, as from any unsalted hash. It is written only when the URL holds a redacted value.
package struct JournalIdentity: Sendable, Equatable {
    /// The URL without a signature's parameters, redacted (`Redaction.url(_:)`): what the
    /// journal's `url` field holds and messages show.
    package let url: String
    /// SHA-256 (lowercase hex) of the URL without a signature's parameters when ``url`` had to
    /// hide something in it; `nil` when ``url`` says it all.
    package let digest: String?

    /// The identity of a download of `url` (the user's URL).
    package init(_ url: String) {
        let unsigned = Self.unsigned(url)
        self.url = Redaction.url(unsigned)
        if self.url == unsigned {
            digest = nil
        } else {
            let sha = Digest(.sha256)
            sha.update(Array(unsigned.utf8))
            digest = sha.finalize().hex
        }
    }

    /// `url` without the parameters of the signing schemes whose signature it carries (see the
    /// table); the order of the rest, and the fragment, kept. A URL without a query is returned as is.
    package static func unsigned(_ url: String) -> String {
        guard let question = url.firstIndex(of: "?") else { return url }
        let fragmentStart = url[question...].firstIndex(of: "#") ?? url.endIndex
        let pairs = url[url.index(after: question)..<fragmentStart].split(separator: "&", omittingEmptySubsequences: false)
        let names = pairs.map { pair in (pair.firstIndex(of: "=").map { pair[..<$0] } ?? pair).lowercased() }
        let present = Set(names)
        let dropped = signingSchemes.filter { present.contains($0.marker) }.reduce(into: Set<String>()) { $0.formUnion($1.parameters) }
        guard !dropped.isEmpty else { return url }
        let kept = zip(pairs, names).filter { !dropped.contains($0.1) }.map { String($0.0) }
        let base = String(url[..<question])
        return (kept.isEmpty ? base : base + "?" + kept.joined(separator: "&")) + url[fragmentStart...]
    }

    /// Each scheme's signature parameter and every parameter that changes when it signs again
    /// (lowercased).
    private static let signingSchemes: [(marker: String, parameters: Set<String>)] = [
        ("x-amz-signature", ["x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-expires",
                             "x-amz-signedheaders", "x-amz-signature", "x-amz-security-token"]),
        ("x-goog-signature", ["x-goog-algorithm", "x-goog-credential", "x-goog-date", "x-goog-expires",
                              "x-goog-signedheaders", "x-goog-signature"]),
        ("signature", ["signature", "expires", "awsaccesskeyid", "googleaccessid", "policy", "key-pair-id",
                       "x-amz-security-token"]),
        // Azure's SAS, with a user-delegation key's own (skoid … skv).
        ("sig", ["sig", "se", "st", "sv", "sp", "spr", "sr", "ss", "srt", "si", "sdd", "ses", "saoid", "suoid", "scid",
                 "skoid", "sktid", "skt", "ske", "sks", "skv"]),
    ]
}
