import RangeFetchBase

/// What one download's requests teach its ``SourceSet``, and the warnings that go with it: each
/// request is booked against the source it went to; answers refresh a redirect's URL and reveal
/// ETags that disagree; refusing, failing or slow sources are dropped. The engine carries out
/// what this decides (moving a dropped source's requests elsewhere, fewer connections).
///
/// Engine thread only.
package final class EngineSources {
    package private(set) var sourceSet: SourceSet
    private let report: @Sendable (EngineEvent) -> Void
    /// How a server last refused a connection, and which source it was, not reported yet.
    private var pushback: (how: String, by: SourceID)?
    /// Sources whose refusals were reported: a warning says it once per source (the bar, `-v`
    /// and the JSON's `target_connections` show each lower count); 14 lines for one server were
    /// noise.
    private var pushbackReported: Set<SourceID> = []

    /// Mirrors agreed while the engine runs, and where drops are told; `nil`: none come.
    private let feed: MirrorFeed?
    /// How many of the feed's mirrors were taken.
    private var fed = 0

    package init(remote: RemoteFile, mirrors: [RemoteFile], feed: MirrorFeed?, report: @escaping @Sendable (EngineEvent) -> Void) {
        sourceSet = SourceSet(remote: remote, mirrors: mirrors)
        self.feed = feed
        self.report = report
        takeAgreedMirrors()
    }

    /// Before a decision round: mirrors agreed since the last one join (their requests start
    /// from this round), the mirror checks' warnings are said, and the sources learn from the
    /// `running` requests (``learn(from:)``). Returns how many sources joined.
    package func refresh(running: some Sequence<SegmentTransfer>) -> Int {
        let joined = takeAgreedMirrors()
        for transfer in running { learn(from: transfer) }
        return joined
    }

    @discardableResult
    private func takeAgreedMirrors() -> Int {
        guard let feed else { return 0 }
        for warning in feed.takeWarnings() { report(.warning(warning)) }
        let (fresh, seen) = feed.mirrors(after: fed)
        fed = seen
        return fresh.filter { sourceSet.add(mirror: $0) != nil }.count
    }

    package subscript(id: SourceID) -> SourceSet.Entry { sourceSet[id] }
    package subscript(source id: SourceID) -> Source { sourceSet[source: id] }

    /// The source the next request goes to; `nil` when each is at its connection limit.
    package func pick(maximumPerSource: Int, avoiding: SourceID? = nil) -> SourceID? {
        sourceSet.pick(maximumPerSource: maximumPerSource, avoiding: avoiding)
    }

    package func started(_ id: SourceID) { sourceSet.started(id) }

    /// The mirrors' delivered bytes (``SourceSet/mirrorExtents``) plus what `running` mirror
    /// requests received so far: every mirror byte a checkpoint may count as written. A request
    /// whose `Content-Digest` is still to be checked is left out: its bytes are not counted as
    /// written yet (and, proven by a mirror's own digest, are still spot-checked once ended).
    package func mirrorBytes(running: some Sequence<SegmentTransfer>) -> [String: [ByteRange]] {
        var extents = sourceSet.mirrorExtents
        for transfer in running where !transfer.sourceID.isMain && transfer.unprovenFrom == nil
            && !Self.settlesDeliveredBytes(transfer.proofs.proof, fromMain: false) {
            guard let requested = transfer.requested, transfer.bytesReceived > 0 else { continue }
            extents[sourceSet[transfer.sourceID].remote.url, default: []].append(
                ByteRange(requested.lower, min(requested.upper, requested.lower + transfer.bytesReceived)))
        }
        return extents
    }

    /// Books a request's end against its source (and a mirror's delivered bytes, unless its
    /// `Content-Digest` rejected them: they are fetched again). A mirror's matching
    /// `Content-Digest` proves only that its bytes arrived as it sent them, not that they are the
    /// file's: a mirror that serves zeros sends the digest of its zeros. So its bytes are still
    /// spot-checked against the main URL (or proven by the user's or a metalink's digests).
    package func ended(_ transfer: SegmentTransfer, now: Double) {
        let id = transfer.sourceID
        let settled = Self.settlesDeliveredBytes(transfer.proofs.proof, fromMain: id.isMain)
        if let requested = transfer.requested, transfer.bytesReceived > 0, !settled {
            sourceSet.delivered(id, ByteRange(requested.lower, min(requested.upper, requested.lower + transfer.bytesReceived)))
        }
        sourceSet.ended(id, bytes: transfer.bytesReceived, firstByteAt: transfer.firstByteAt, now: now)
    }

    /// Whether a response's `Content-Digest` proof settles its bytes so that they need no spot
    /// check: a mismatch always (the bytes are rejected); a match only from the main URL, whose
    /// word is what mirrors are checked against.
    ///
    /// | proof        | main URL | mirror |
    /// |--------------|----------|--------|
    /// | none         | no       | no     |
    /// | `unproven`   | no       | no     |
    /// | `matched`    | yes      | no     |
    /// | `mismatched` | yes      | yes    |
    package static func settlesDeliveredBytes(_ proof: ContentProof?, fromMain: Bool) -> Bool {
        switch proof {
        case nil, .unproven?: false
        case .matched?: fromMain
        case .mismatched?: true
        }
    }

    /// Lets the source learn from an answered request before new ones start: a freshly resolved
    /// URL, and origins that disagree on the ETag.
    package func learn(from transfer: SegmentTransfer) {
        let id = transfer.sourceID
        if transfer.firstByteAt != nil {
            sourceSet[source: id].answered(url: transfer.url, effectiveURL: transfer.effectiveURL)
            sourceSet[source: id].progressed()
        }
        guard transfer.state.sawOtherETag, sourceSet[source: id].etagsSeenToDisagree() else { return }
        report(.warning(.etagsDisagree(url: Redaction.url(sourceSet[source: id].userURL), probed: sourceSet[id].remote.etag ?? "",
                                        seen: transfer.head["etag"] ?? "")))
    }

    /// A request failed (not fatally) for `why`: the source it went to, when that failed once
    /// too often and is dropped.
    package func failed(_ transfer: SegmentTransfer, why: String) -> SourceID? {
        announce(sourceSet.failed(transfer.sourceID, why: why))
    }

    package func succeeded(_ id: SourceID) { sourceSet.succeeded(id) }

    /// Sources far slower per connection than the best one, dropped (see
    /// ``SourceSet/slowSources(running:now:)``).
    package func dropSlow(running: some Sequence<SegmentTransfer>, now: Double) -> [SourceID] {
        guard sourceSet.hasMirrors else { return [] }
        let requests = running.map {
            SourceSet.Running(id: $0.sourceID, bytes: $0.bytesReceived, firstByteAt: $0.firstByteAt)
        }
        return sourceSet.slowSources(running: requests, now: now).compactMap(announce)
    }

    /// What to do about a refusal (401, 403, 410, an expired-token 400) of `transfer`: an
    /// expired signed URL is resolved afresh through the user's URL (see ``Source``); another
    /// source may be dropped; otherwise the refusal stands, as the returned error.
    package func refused(_ transfer: SegmentTransfer, status: Int, error: DownloadError) -> (retry: Bool, drop: SourceID?, error: DownloadError) {
        let said = transfer.errorSummary.map { ", server said \($0)" } ?? ""
        let id = transfer.sourceID
        switch sourceSet[source: id].refused(url: transfer.url, redirected: transfer.wasRedirected, round: transfer.resolutionRound,
                                             status: status, body: transfer.errorText) {
        case .reResolve:
            report(.warning(.reResolvingRedirect(url: Redaction.url(sourceSet[source: id].userURL), status: status,
                                                 serverSaid: transfer.errorSummary)))
            return (true, nil, error)
        case .retry:
            return (true, nil, error)
        case .fatal:
            if let drop = announce(sourceSet.exclude(id, why: "it refused a request (HTTP \(status)\(said))")) {
                return (true, drop, error)
            }
            if transfer.url == sourceSet[source: id].userURL && sourceSet[source: id].resolutions > 0 && transfer.wasRedirected {
                let userURL = sourceSet[source: id].userURL
                return (false, nil, DownloadError(error.code, "\(userURL): a freshly resolved redirect target refused the request too (HTTP \(status)\(said)); the link may have been revoked",
                                                  url: userURL, remedy: error.remedy))
            }
            return (false, nil, error.with(message: error.message + said))
        }
    }

    /// `id` refused a connection (429, 503, a refused or reset connect) with `error`, and the
    /// scheduler went from `before` to `after` connections. Refusals that arrive together are
    /// reported once, by ``reportPushback(connections:)``.
    package func pushedBack(_ id: SourceID, error: DownloadError, before: Int, after: Int) {
        sourceSet.pushedBack(id)
        guard after < before else { return }
        let how = if case .httpStatus(let status) = error.code { "HTTP \(status)" } else { "connection refused or reset" }
        pushback = (how, id)
    }

    package func reportPushback(connections: Int) {
        guard let (how, id) = pushback else { return }
        pushback = nil
        guard pushbackReported.insert(id).inserted else { return }
        report(.warning(.fewerConnections(url: Redaction.url(sourceSet[source: id].userURL), how: how, connections: connections)))
    }

    /// Warns that a source is dropped; returns its id.
    private func announce(_ drop: SourceSet.Drop?) -> SourceID? {
        guard let drop else { return nil }
        report(.warning(drop.warning))
        if !drop.id.isMain { feed?.dropped(sourceSet[drop.id].remote.url) }
        return drop.id
    }
}
