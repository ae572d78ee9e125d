import RangeFetchBase

/// Names one source of a download within its ``SourceSet``: stable for the download's life.
package struct SourceID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Its position: 0 is the main URL, the others are mirrors in the order given.
    package let index: Int

    /// The main URL's source.
    package static let main = SourceID(index: 0)

    package var isMain: Bool { index == 0 }

    package static func < (a: SourceID, b: SourceID) -> Bool { a.index < b.index }

    package var description: String { "source \(index)" }

    package init(index: Int) {
        self.index = index
    }
}

/// The sources of one file (the main URL and its mirrors) and how each is used and does: which
/// one the next request goes to, when one is dropped, and what each mirror delivered.
///
/// A pure value on the engine thread (aria2's FileEntry and URISelector): fed what requests did,
/// it answers with decisions (``SourceID``s to ask, ``Drop``s to carry out) and the engine acts
/// on them. No sockets, no clock of its own (times are monotonic seconds passed in); tested as a
/// table.
package struct SourceSet: Sendable {
    /// How a source is used and how it does.
    package struct Usage: Sendable, Equatable {
        /// Requests to it running now.
        package var active = 0
        /// Body bytes and seconds of its finished requests (seconds from their first byte).
        package var bytes: Int64 = 0
        package var seconds = 0.0
        /// Requests in a row that failed.
        package var failuresInARow = 0
        /// It gets no more requests.
        package var dropped = false
        /// Times it refused a connection (429, 503, a refused or reset connect).
        package var pushbacks = 0

        /// Bytes per second per connection, once it has a second of record.
        package var rate: Double? { Self.rate(bytes: bytes, seconds: seconds) }

        package static func rate(bytes: Int64, seconds: Double) -> Double? { seconds >= 1 ? Double(bytes) / seconds : nil }
    }

    /// One source: where its requests go, its probe, its origin, and its record.
    package struct Entry: Sendable {
        /// Where requests go and the `If-Range` validator (redirects, expiring signatures).
        package var source: Source
        /// Its probe (size, validators).
        package let remote: RemoteFile
        /// `scheme://host:port` of its resolved URL, as a shared per-host limit counts it.
        package let origin: String
        package var usage = Usage()
    }

    /// A source to stop using: the engine warns with ``message`` and moves its running requests
    /// to the others.
    package struct Drop: Sendable, Equatable {
        package let id: SourceID
        /// The source's URL, redacted for messages.
        package let url: String
        /// Why, for the warning (`2 requests in a row failed (...)`).
        package let reason: String

        /// What the download warns.
        package var warning: DownloadWarning { .sourceDropped(url: url, isMain: id.isMain, reason: reason) }

        package init(id: SourceID, url: String, reason: String) {
            self.id = id
            self.url = url
            self.reason = reason
        }
    }

    /// A mirror failing this many requests in a row is dropped.
    package static let failuresToDrop = 2
    /// A source delivering under this fraction of the best source's rate per connection is dropped.
    package static let slowFraction = 0.25
    /// Rates within this factor of each other count as the same speed.
    package static let tieFactor = 1.1

    package private(set) var entries: [Entry]

    /// The bytes each mirror delivered, by the mirror's URL (possibly a little more than was
    /// kept: a failed request's last buffer is dropped): what ``MirrorSpotCheck`` checks.
    package private(set) var mirrorExtents: [String: [ByteRange]] = [:]

    /// `remote` is the main URL's probe; `mirrors` the others', checked to agree with it.
    package init(remote: RemoteFile, mirrors: [RemoteFile] = []) {
        entries = ([remote] + mirrors).map {
            let source = Source(remote: $0)
            return Entry(source: source, remote: $0, origin: source.origin ?? "")
        }
    }

    /// A mirror agreed while the download runs joins the sources, after the others; `nil` when
    /// a source of its URL is already among them.
    @discardableResult
    package mutating func add(mirror remote: RemoteFile) -> SourceID? {
        guard !entries.contains(where: { $0.remote.url == remote.url }) else { return nil }
        let source = Source(remote: remote)
        entries.append(Entry(source: source, remote: remote, origin: source.origin ?? ""))
        return SourceID(index: entries.count - 1)
    }

    /// Every source's id, the main URL's first.
    package var ids: [SourceID] { entries.indices.map(SourceID.init(index:)) }

    /// More than one source: mirrors are in play.
    package var hasMirrors: Bool { entries.count > 1 }

    package subscript(id: SourceID) -> Entry { entries[id.index] }

    /// Where a source's requests go; mutable so the engine can feed it what responses said.
    package subscript(source id: SourceID) -> Source {
        get { entries[id.index].source }
        set { entries[id.index].source = newValue }
    }

    // MARK: Picking

    /// The source for the next request: one not dropped with room under `maximumPerSource`; one
    /// not measured yet first (so each gets tried), else the fastest per connection, rates within
    /// 10% going to the least busy. `nil` when every source is full or dropped. `avoiding` (a
    /// source whose bytes for this range failed their digest) is picked only when no other can be.
    package func pick(maximumPerSource: Int, avoiding: SourceID? = nil) -> SourceID? {
        var open = entries.indices.filter { !entries[$0].usage.dropped && entries[$0].usage.active < maximumPerSource }
        if let avoiding, open.contains(where: { $0 != avoiding.index }) { open.removeAll { $0 == avoiding.index } }
        guard hasMirrors else { return open.first.map(SourceID.init(index:)) }
        return open.min { a, b in
            let (usageA, usageB) = (entries[a].usage, entries[b].usage)
            let (rateA, rateB) = (usageA.rate ?? .infinity, usageB.rate ?? .infinity)
            if max(rateA, rateB) > Self.tieFactor * min(rateA, rateB) { return rateA > rateB }
            return usageA.active < usageB.active
        }.map(SourceID.init(index:))
    }

    // MARK: Requests

    /// A request to `id` started.
    package mutating func started(_ id: SourceID) {
        entries[id.index].usage.active += 1
    }

    /// A request to `id` ended (finished, failed or detached) after `bytes` body bytes, the first
    /// of them at `firstByteAt` (`nil`: none came).
    package mutating func ended(_ id: SourceID, bytes: Int64, firstByteAt: Double?, now: Double) {
        entries[id.index].usage.active = max(0, entries[id.index].usage.active - 1)
        if let firstByteAt {
            entries[id.index].usage.bytes += bytes
            entries[id.index].usage.seconds += max(0, now - firstByteAt)
        }
    }

    /// A mirror delivered the bytes `range` (the main URL's bytes are not recorded).
    package mutating func delivered(_ id: SourceID, _ range: ByteRange) {
        guard !id.isMain, !range.isEmpty else { return }
        mirrorExtents[entries[id.index].remote.url, default: []].append(range)
    }

    /// A request to `id` failed (for `why`): a mirror failing ``failuresToDrop`` in a row is
    /// dropped while another source remains. Only counted with several sources.
    package mutating func failed(_ id: SourceID, why: String) -> Drop? {
        guard hasMirrors else { return nil }
        entries[id.index].usage.failuresInARow += 1
        guard entries[id.index].usage.failuresInARow >= Self.failuresToDrop else { return nil }
        return exclude(id, why: "\(Self.failuresToDrop) requests in a row failed (\(why))")
    }

    /// A request to `id` succeeded: its run of failures ends.
    package mutating func succeeded(_ id: SourceID) {
        entries[id.index].usage.failuresInARow = 0
    }

    /// `id` refused a connection (429, 503, a refused or reset connect).
    package mutating func pushedBack(_ id: SourceID) {
        entries[id.index].usage.pushbacks += 1
    }

    /// A request still running: its source, its body bytes so far, when its first byte came.
    package struct Running: Sendable, Equatable {
        package var id: SourceID
        package var bytes: Int64
        package var firstByteAt: Double?

        package init(id: SourceID, bytes: Int64, firstByteAt: Double? = nil) {
            self.id = id
            self.bytes = bytes
            self.firstByteAt = firstByteAt
        }
    }

    /// Drops sources far slower per connection than the best one (under ``slowFraction`` of it),
    /// never the last one left. Requests still `running` count once a second past their first
    /// byte, so a crawling mirror is dropped during its first (long) request rather than after it.
    package mutating func slowSources(running: [Running], now: Double) -> [Drop] {
        guard hasMirrors else { return [] }
        var record = entries.map { (bytes: $0.usage.bytes, seconds: $0.usage.seconds) }
        for request in running {
            guard let first = request.firstByteAt, now - first >= 1 else { continue }
            record[request.id.index].bytes += request.bytes
            record[request.id.index].seconds += now - first
        }
        let rates = entries.indices.compactMap { index in
            entries[index].usage.dropped
                ? nil : Usage.rate(bytes: record[index].bytes, seconds: record[index].seconds).map { (index, $0) }
        }
        guard let best = rates.map(\.1).max(), rates.count > 1 else { return [] }
        var drops: [Drop] = []
        for (index, rate) in rates where rate < Self.slowFraction * best {
            let slow = ByteCount.format(Int64(rate)), fast = ByteCount.format(Int64(best))
            if let drop = exclude(SourceID(index: index),
                                  why: "it delivers \(slow)/s per connection against \(fast)/s from the fastest source") {
                drops.append(drop)
            }
        }
        return drops
    }

    /// Stops using `id`; `nil` when it is already dropped or the last one left.
    package mutating func exclude(_ id: SourceID, why: String) -> Drop? {
        guard !entries[id.index].usage.dropped,
              entries.indices.contains(where: { $0 != id.index && !entries[$0].usage.dropped }) else { return nil }
        entries[id.index].usage.dropped = true
        return Drop(id: id, url: Redaction.url(entries[id.index].remote.url), reason: why)
    }
}
