import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``Metalink/parse(_:origin:)``: good documents as a table, hostile ones refused or made safe.
struct MetalinkTests {
    static let sha256 = String(repeating: "ab", count: 32)
    static let sha1 = String(repeating: "cd", count: 20)

    static func document(_ file: String, name: String = "f.bin") -> [UInt8] {
        Array("""
        <?xml version="1.0" encoding="UTF-8"?>
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="\(name)">\(file)</file>
        </metalink>
        """.utf8)
    }

    @Test func aFullFileEntryIsRead() throws {
        let metalink = try Metalink.parse(Self.document("""
            <size>3000</size>
            <hash type="sha-256">\(Self.sha256)</hash>
            <hash type="SHA-1">\(Self.sha1.uppercased())</hash>
            <hash type="crc32">00000000</hash>
            <pieces length="1024" type="sha-256">
              <hash>\(Self.sha256)</hash><hash>\(Self.sha256)</hash><hash>\(Self.sha256)</hash>
            </pieces>
            <url priority="2" location="de">http://b.example/f</url>
            <url>https://c.example/f</url>
            <url priority="1">http://a.example/f</url>
            <url priority="1">ftp://a.example/f</url>
            <metaurl mediatype="torrent">http://a.example/f.torrent</metaurl>
            """), origin: "x.meta4")
        #expect(metalink.name == "f.bin")
        #expect(metalink.size == 3000)
        #expect(metalink.digests.map(\.description) == ["sha256=\(Self.sha256)", "sha1=\(Self.sha1)"])
        #expect(metalink.pieces?.length == 1024 && metalink.pieces?.digests.count == 3)
        #expect(metalink.pieces?.range(2, size: 3000) == ByteRange(2048, 3000))
        #expect(metalink.locations.map(\.url) == ["http://a.example/f", "http://b.example/f", "https://c.example/f"])
        #expect(metalink.locations[1].country == "de" && metalink.locations[1].priority == 2)
        #expect(metalink.locations[2].priority == Metalink.lowestPriority)
        #expect(metalink.ignored.count == 2, "\(metalink.ignored)")  // crc32, ftp:
        #expect(metalink.ignored.contains { $0.contains("ftp://a.example/f") })
    }

    /// Metalink 3.0 (aria2p's test suite adds Debian's): `<files>`, hashes and numbered pieces
    /// under `<verification>`, URLs with a `preference` under `<resources>`.
    @Test func aMetalink3DocumentIsReadAsTheSameThings() throws {
        let pieces = [Self.sha1, String(repeating: "ef", count: 20)]
        let metalink = try Metalink.parse(Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink version="3.0" xmlns="http://www.metalinker.org/">
              <publisher><name>p</name><url>http://publisher.example/</url></publisher>
              <files>
                <file name="debian.iso">
                  <size>3000</size>
                  <verification>
                    <hash type="md5">\(String(repeating: "01", count: 16))</hash>
                    <hash type="sha1">\(Self.sha1)</hash>
                    <hash type="ed2k">c54534fc9dd188034240fd56dbd6e060</hash>
                    <pieces length="2048" type="sha1">
                      <hash piece="1">\(pieces[1])</hash><hash piece="0">\(pieces[0])</hash>
                    </pieces>
                  </verification>
                  <resources>
                    <url type="ftp" preference="100">ftp://a.example/f</url>
                    <url type="http" location="au" preference="10">http://low.example/f</url>
                    <url type="http" preference="100">http://best.example/f</url>
                    <url type="https">https://unranked.example/f</url>
                  </resources>
                </file>
              </files>
            </metalink>
            """.utf8), origin: "debian.metalink")
        #expect(metalink.name == "debian.iso" && metalink.size == 3000)
        #expect(metalink.digests.map(\.description) == ["md5=\(String(repeating: "01", count: 16))", "sha1=\(Self.sha1)"])
        #expect(metalink.pieces?.length == 2048 && metalink.pieces?.digests.map(\.hex) == pieces)
        #expect(metalink.locations.map(\.url) == ["http://best.example/f", "http://low.example/f", "https://unranked.example/f"])
        #expect(metalink.locations.map(\.priority) == [1, 91, Metalink.lowestPriority])
        #expect(metalink.locations[1].country == "au")
        #expect(metalink.ignored.count == 2, "\(metalink.ignored)")  // ed2k, ftp:
    }

    /// A metalink listing 3,000 URLs: the best 8 by priority are used, the next 8 kept as
    /// backups, the rest named as ignored (3,365 requests to 673 hosts were made before, and no
    /// byte saved in 120 s).
    @Test func onlyTheBestFewURLsOfAHugeMetalinkAreUsed() throws {
        let urls = (0..<3000).map { "<url priority=\"\(3000 - $0)\">http://h\($0).example/f</url>" }.joined()
        let metalink = try Metalink.parse(Self.document(urls, name: "f.bin"), origin: "x")
        #expect(metalink.locations.count == Metalink.maximumLocations)
        #expect(metalink.locations.first?.url == "http://h2999.example/f")
        #expect(metalink.backupLocations.map(\.url) == (0..<8).map { "http://h\(2991 - $0).example/f" })
        #expect(metalink.ignored.contains { $0.contains("2984 more <url>s ignored") && $0.contains("next 8 kept as backups") },
                "\(metalink.ignored)")
        var options = DownloadOptions()
        #expect(metalink.apply(to: &options) == "http://h2999.example/f")
        #expect(options.mirrors.count == 7 && options.backupMirrors.count == 8)
    }

    /// Up to 16 URLs: the best 8 used, the others backups, nothing ignored.
    @Test func urlsPastTheCapAreBackups() throws {
        let urls = (0..<12).map { "<url>http://h\($0).example/f</url>" }.joined()
        let metalink = try Metalink.parse(Self.document(urls, name: "f.bin"), origin: "x")
        #expect(metalink.locations.map(\.url) == (0..<8).map { "http://h\($0).example/f" })
        #expect(metalink.backupLocations.map(\.url) == (8..<12).map { "http://h\($0).example/f" })
        #expect(metalink.ignored.isEmpty, "\(metalink.ignored)")
    }

    /// A hostile or odd name is cut to its last component, never a path out of the directory.
    @Test(arguments: [
        ("../../etc/x", "x"), ("/etc/passwd", "passwd"), ("dir/sub/f.iso", "f.iso"),
        (".bashrc", "bashrc"), ("  f.iso ", "f.iso"), ("..\\..\\win.ini", "win.ini"),
        (". .bashrc", "bashrc"), ("dir/. . .profile", "profile"),
    ])
    func namesAreMadeSafe(name: String, saved: String) throws {
        let metalink = try Metalink.parse(Self.document("<url>http://a.example/f</url>", name: name), origin: "x")
        #expect(metalink.name == saved)
    }

    /// Each document refused, with what its message says.
    @Test(arguments: [
        ("<url>file:///etc/passwd</url>", "no http:// or https://"),
        ("", "no http:// or https://"),
        ("<size>-1</size><url>http://a/f</url>", "not a byte count"),
        ("<hash type=\"sha-256\">abc</hash><url>http://a/f</url>", "64 hex digits"),
        ("<size>3000</size><pieces length=\"1024\" type=\"sha-256\"><hash>\(sha256)</hash></pieces><url>http://a/f</url>",
         "has 1 hashes"),
        ("<pieces length=\"1024\" type=\"sha-256\"><hash>\(sha256)</hash></pieces><url>http://a/f</url>", "without a <size>"),
        ("<size>10</size><pieces length=\"0\" type=\"sha-256\"></pieces><url>http://a/f</url>", "no positive length"),
        ("<url priority=\"x\">http://a/f</url>", "priority"),
    ])
    func badEntriesAreRefused(file: String, says: String) {
        #expect {
            try Metalink.parse(Self.document(file), origin: "x.meta4")
        } throws: { error in
            let error = error as? DownloadError
            return error?.code == .invalidOption && error?.message.contains(says) == true && error?.message.contains("x.meta4") == true
        }
    }

    @Test(arguments: [
        ("""
         <?xml version="1.0"?>
         <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
         <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
         <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="&lol3;"><url>http://a/f</url></file></metalink>
         """, "document type"),
        ("""
         <?xml version="1.0"?>
         <!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]>
         <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="f"><url>http://a/&x;</url></file></metalink>
         """, "document type"),
        ("<metalink><file name=\"f\"><url>http://a/f</url></metalink>", "not well-formed"),
        ("<metalink/>", "no <file>"),
        ("<metalink version=\"3.0\"><files><file name=\"f\"><resources><url type=\"ftp\">ftp://a/f</url></resources></file></files></metalink>",
         "no http:// or https://"),
        ("<metalink version=\"3.0\"><files><file name=\"f\"><resources><url preference=\"101\">http://a/f</url></resources></file></files></metalink>",
         "from 0 to 100"),
        ("<metalink version=\"3.0\"><files><file name=\"f\"><size>3</size><verification><pieces length=\"2\" type=\"sha1\"><hash piece=\"0\">\(sha1)</hash><hash piece=\"0\">\(sha1)</hash></pieces></verification><resources><url>http://a/f</url></resources></file></files></metalink>",
         "each once"),
        ("<metalink version=\"3.0\"><files/></metalink>", "no <file>"),
        ("<feed/>", "not a Metalink document"),
        ("<metalink><file name=\"a\"><url>http://a/a</url></file><file name=\"b\"><url>http://a/b</url></file></metalink>", "2 files"),
        ("<metalink><file name=\"..\"><url>http://a/a</url></file></metalink>", "no usable name"),
    ])
    func hostileDocumentsAreRefused(text: String, says: String) {
        #expect {
            try Metalink.parse(Array(text.utf8), origin: "x.meta4")
        } throws: { error in
            (error as? DownloadError)?.message.contains(says) == true
        }
    }

    @Test(arguments: [
        ("<!DOCTYPE m><m/>", true), ("<?xml version=\"1.0\"?>\n<!-- <m> --><!DOCTYPE m []><m/>", true),
        ("<?xml version=\"1.0\"?><m><![CDATA[<!DOCTYPE]]></m>", false), ("<m/>", false), ("", false),
    ])
    func aDocumentTypeIsFoundInTheProlog(text: String, found: Bool) {
        #expect(XMLTree.prologDeclaresDocumentType(Array(text.utf8)) == found)
    }

    @Test(arguments: [
        ("f.meta4", true), ("dir/F.META4", true), ("/tmp/x.metalink", true), ("http://h/f.meta4", false),
        ("s3://b/f.meta4", false), ("f.meta4.txt", false), ("meta4", false),
    ])
    func metalinkFilesAreToldFromURLs(text: String, isMetalink: Bool) {
        #expect(SourceAddress.isMetalinkFile(text) == isMetalink)
    }

    /// What a metalink makes of the options: the best URL requested, the rest mirrors after the
    /// user's, digests added where the user gave none of that algorithm, the name in the
    /// directory (links there not followed), an output path kept.
    @Test func applyingSetsSourcesDigestsAndTheName() throws {
        let metalink = try Metalink.parse(Self.document("""
            <size>10</size><hash type="sha-256">\(Self.sha256)</hash><hash type="sha-1">\(Self.sha1)</hash>
            <url priority="2">http://b/f</url><url priority="1">http://a/f</url><url priority="3">http://c/f</url>
            """), origin: "x")
        var options = DownloadOptions()
        options.mirrors = ["http://m/f", "http://c/f"]
        options.checksums = [try #require(DigestValue(algorithm: .sha1, hex: String(repeating: "0", count: 40)))]
        options.destination = .directory("out")
        #expect(metalink.apply(to: &options) == "http://a/f")
        #expect(options.mirrors == ["http://m/f", "http://c/f", "http://b/f"])
        #expect(options.checksums.map(\.algorithm) == [.sha1, .sha256])
        #expect(options.checksums[0].hex == String(repeating: "0", count: 40))
        #expect(options.expectedSize == 10 && options.pieceDigests == nil)
        #expect(options.destination == .file("out/f.bin") && !options.followsLinkAtOutputPath)

        var given = DownloadOptions()
        given.destination = .file("/tmp/mine")
        _ = metalink.apply(to: &given)
        #expect(given.destination == .file("/tmp/mine") && given.followsLinkAtOutputPath)
        var here = DownloadOptions()
        _ = metalink.apply(to: &here)
        #expect(here.destination == .file("f.bin"))
    }

    @Test func aHugeDocumentIsRefusedUnread() {
        let huge = [UInt8](repeating: UInt8(ascii: " "), count: Metalink.maximumBytes + 1)
        #expect {
            try Metalink.parse(huge, origin: "x.meta4")
        } throws: { error in
            (error as? DownloadError)?.message.contains("larger than 16 MiB") == true
        }
    }
}
