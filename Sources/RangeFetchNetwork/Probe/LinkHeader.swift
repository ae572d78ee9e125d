import RangeFetchBase

/// `Link` header fields (RFC 8288) as Metalink/HTTP (RFC 6249) uses them: `rel=duplicate` names
/// another URL of the same file (a mirror). A pure parser, tested as a table.
///
/// A server's links are untrusted: only absolute `http://` and `https://` URLs are kept, at most
/// ``maximumDuplicates`` of them to check at once and ``maximumBackupDuplicates`` more as
/// backups, and a duplicate becomes a mirror under the same agreement rules as one the user gave
/// (sampled against the main URL, no credentials sent to another origin).
package enum LinkHeader {
    /// One link: its target and parameters (names lower-cased, values unquoted).
    package struct Link: Equatable {
        package var target: String
        package var parameters: [String: String]

        /// The relation types (`rel` may list several, space-separated), lower-cased.
        package var relations: [String] { (parameters["rel"] ?? "").lowercased().split(separator: " ").map(String.init) }

        package init(target: String, parameters: [String: String]) {
            self.target = target
            self.parameters = parameters
        }
    }

    /// The most duplicates taken from one answer (as from one metalink, ``Metalink/maximumLocations``).
    package static let maximumDuplicates = 8
    /// The most duplicates kept as backups past those (as ``Metalink/maximumBackupLocations``).
    package static let maximumBackupDuplicates = 8

    /// The links in a `Link` field value (several fields joined with ", "); a malformed link
    /// ends the parse (what came before it is kept).
    package static func parse(_ value: String) -> [Link] {
        var links: [Link] = []
        var rest = Substring(value)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "," }
            guard rest.first == "<", let close = rest.firstIndex(of: ">") else { return links }
            let target = String(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...]
            var parameters: [String: String] = [:]
            while true {
                rest = rest.drop { $0 == " " || $0 == "\t" }
                guard rest.first == ";" else { break }
                rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
                let name = rest.prefix { $0 != "=" && $0 != ";" && $0 != "," && $0 != " " }
                rest = rest[name.endIndex...].drop { $0 == " " || $0 == "\t" }
                var parameterValue = ""
                if rest.first == "=" {
                    rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
                    if rest.first == "\"" {
                        rest = rest.dropFirst()
                        guard let end = rest.firstIndex(of: "\"") else { return links }
                        parameterValue = String(rest[..<end])
                        rest = rest[rest.index(after: end)...]
                    } else {
                        let token = rest.prefix { $0 != ";" && $0 != "," && $0 != " " }
                        parameterValue = String(token)
                        rest = rest[token.endIndex...]
                    }
                }
                // The first occurrence of a parameter counts (RFC 8288 3.3 for rel).
                let key = name.lowercased()
                if !key.isEmpty, parameters[key] == nil { parameters[key] = parameterValue }
            }
            links.append(Link(target: target, parameters: parameters))
        }
    }

    /// The `rel=duplicate` targets of a `Link` field value that are absolute http(s) URLs other
    /// than `url`, in order, without repeats, at most ``maximumDuplicates``.
    package static func duplicates(_ value: String?, of url: String) -> [String] {
        Array(allDuplicates(value, of: url).prefix(maximumDuplicates))
    }

    /// The duplicates past ``duplicates(_:of:)``'s, at most ``maximumBackupDuplicates``: backups.
    package static func backupDuplicates(_ value: String?, of url: String) -> [String] {
        Array(allDuplicates(value, of: url).dropFirst(maximumDuplicates))
    }

    private static func allDuplicates(_ value: String?, of url: String) -> [String] {
        guard let value else { return [] }
        var found: [String] = []
        for link in parse(value) where link.relations.contains("duplicate") {
            guard link.target != url, !found.contains(link.target), (try? SourceAddress.http(link.target)) != nil else { continue }
            found.append(link.target)
            if found.count == maximumDuplicates + maximumBackupDuplicates { break }
        }
        return found
    }
}

extension LinkHeader {
    /// The media type of a Metalink 4 document.
    package static let metalinkType = "application/metalink4+xml"

    /// The first `rel=describedby; type="application/metalink4+xml"` target of a `Link` field
    /// value that is an absolute http(s) URL: a metalink describing the file (RFC 6249).
    package static func metalinkDescription(_ value: String?) -> String? {
        guard let value else { return nil }
        return parse(value).first {
            $0.relations.contains("describedby") && $0.parameters["type"]?.lowercased() == metalinkType
                && (try? SourceAddress.http($0.target)) != nil
        }?.target
    }
}
