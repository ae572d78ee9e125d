import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Secrets in URLs (a password, a signature) never reach the journal, events or messages.
struct RedactionTests {
    @Test(arguments: [
        ("http://u:pass@host/f.bin", "http://u:REDACTED@host/f.bin"),
        ("https://u@host/f", "https://u@host/f"),
        ("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abc#x",
         "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED#x"),
        ("https://a.blob.core.windows.net/c/f?sv=2020&se=2026&sig=abc%3D", "https://a.blob.core.windows.net/c/f?sv=2020&se=2026&sig=REDACTED"),
        ("https://hub.example/f?download=true", "https://hub.example/f?download=true"),
        // Google API keys, passwords, OAuth, CloudFront signed URLs.
        ("https://www.googleapis.com/storage/v1/b/o?alt=media&key=AIzaSyA1", "https://www.googleapis.com/storage/v1/b/o?alt=media&key=REDACTED"),
        ("https://h/f?user=bob&password=hunter2&passwd=x", "https://h/f?user=bob&password=REDACTED&passwd=REDACTED"),
        ("https://h/f?client_id=app&client_secret=s&access_token=t&refresh_token=r", "https://h/f?client_id=app&client_secret=REDACTED&access_token=REDACTED&refresh_token=REDACTED"),
        ("https://d1.cloudfront.net/f.bin?Expires=1700000000&Policy=eyJ&Signature=abc&Key-Pair-Id=K2", "https://d1.cloudfront.net/f.bin?Expires=1700000000&Policy=REDACTED&Signature=REDACTED&Key-Pair-Id=REDACTED"),
        ("https://h/f?API-Key=1&secret=2&session_token=3", "https://h/f?API-Key=REDACTED&secret=REDACTED&session_token=REDACTED"),
        // GitLab's private_token, OAuth's code, JWTs, sessions, HMAC-signed links.
        ("https://gitlab.example/api/v4/f?private_token=glpat1&ref=main", "https://gitlab.example/api/v4/f?private_token=REDACTED&ref=main"),
        ("https://h/cb?code=4/0AX&state=s&auth_token=a&Access_Key=k", "https://h/cb?code=REDACTED&state=s&auth_token=REDACTED&Access_Key=REDACTED"),
        ("https://h/f?jwt=eyJ.x.y&session=abc&hmac=ff&expires=1", "https://h/f?jwt=REDACTED&session=REDACTED&hmac=REDACTED&expires=1"),
    ])
    func aURLKeepsEverythingButItsSecrets(url: String, shown: String) {
        #expect(Redaction.url(url) == shown)
    }

    @Test func everyURLInAMessageIsRedacted() {
        let message = "http://a:b@h1/x: redirect to https://h2/y?token=t1 failed (HTTP 403, \"https://c:d@h3/\")"
        #expect(Redaction.text(message) == "http://a:REDACTED@h1/x: redirect to https://h2/y?token=REDACTED failed (HTTP 403, \"https://c:REDACTED@h3/\")")
        #expect(Redaction.text("no url here: 3 of 4") == "no url here: 3 of 4")
        #expect(Redaction.text("https://h/x?X-Amz-Signature=abc: HTTP 403") == "https://h/x?X-Amz-Signature=REDACTED: HTTP 403")
        #expect(DownloadError(.httpStatus(404), "http://u:pw@h/f: HTTP 404").message == "http://u:REDACTED@h/f: HTTP 404")
    }
}

/// The same against the CLI: a download with the password in the URL, killed midway and resumed.
@Suite(.serialized)
final class CredentialsOnDiskTests {
    let server: FaultServer
    let out: TemporaryDirectory

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-secrets")
    }

    deinit { server.stop() }

    @Test func aPasswordInTheURLNeverReachesTheJournalTheEventsOrTheMessages() throws {
        let size: Int64 = 16 << 20
        let plain = server.dataURL(size: size, "authb64=dTpzM2NyZXRwdzEy&rate=2000000")
        let url = plain.replacingOccurrences(of: "http://", with: "http://u:s3cretpw12@")
        let target = out.file("secret.bin")
        let arguments = [url, "-o", target, "-n", "4", "--min-segment", "1M", "-v"]
        let run = try RunningCLI(arguments)
        #expect(run.waitUntilReceived(4 << 20), "never got 4 MiB")
        run.send(SIGKILL)
        _ = try run.wait()
        let journalPath = target + ".part.rfjournal"
        let journal = try Data(contentsOf: URL(fileURLWithPath: journalPath))
        #expect(!String(decoding: journal, as: UTF8.self).contains("s3cretpw"), "the journal holds the password")
        let mode = try FileManager.default.attributesOfItem(atPath: journalPath)[.posixPermissions] as? Int
        #expect(mode == 0o600, "journal mode \(String(mode ?? 0, radix: 8))")
        let partMode = try FileManager.default.attributesOfItem(atPath: target + ".part")[.posixPermissions] as? Int
        #expect(partMode == 0o600, "partial file mode \(String(partMode ?? 0, radix: 8))")
        let events = run.outputLines.joined(separator: "\n")
        #expect(events.contains("u:REDACTED@"), "\(events.prefix(600))")
        #expect(!events.contains("s3cretpw"))
        // The resume matches the redacted journal and finishes the same file.
        let resumed = try runCLI(["--json", "-v"] + arguments)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("\"resumed_bytes\":") && !resumed.stdout.contains("\"resumed_bytes\":0,"), "\(resumed.stdout.prefix(800))")
        #expect(!(resumed.stdout + resumed.stderr).contains("s3cretpw"))
        try server.expectFile(target, size: size, version: 0, sourceLocation: #_sourceLocation)
        // The complete file has the mode of any new file (the secret was the URL, not the bytes).
        let finalMode = try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int
        #expect(finalMode == 0o666 & ~Int(FileSystem.umask), "final mode \(String(finalMode ?? 0, radix: 8))")
        // An error names the URL without its password.
        let missing = try runCLI([url.replacingOccurrences(of: "/data/", with: "/nothing/"), "-o", out.file("x.bin")])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("u:REDACTED@") && !missing.stderr.contains("s3cretpw"), "\(missing.stderr)")
    }

    /// A batch's table and its `batch_finish` results name every file by a redacted URL, a
    /// failed one's too (its file column shows the URL when it has no path).
    @Test func aBatchShowsNoSecretInItsTableOrItsResults() throws {
        let good = server.dataURL(size: 1 << 20, name: "ok.bin", "X-Amz-Signature=sigs3cret1&private_token=pts3cret2")
        let failing = try "http://u:pws3cret3@127.0.0.1:\(freeLoopbackPort())/f.bin?token=toks3cret4&code=codes3cret5"
        for json in [false, true] {
            let result = try runCLI([good, failing, "-d", out.file(json ? "j" : "t"), "--max-tries", "1"] + (json ? ["--json"] : []),
                                    environment: ["COLUMNS": "400"])
            #expect(result.status == 3, "\(result.stderr)")
            let shown = result.stdout + result.stderr
            #expect(shown.contains(json ? "\"event\":\"batch_finish\"" : "1 failed"), "\(shown)")
            #expect(shown.contains("u:REDACTED@127.0.0.1"), "\(shown)")
            #expect(!shown.contains("s3cret"), "json \(json): \(shown)")
        }
    }
}
