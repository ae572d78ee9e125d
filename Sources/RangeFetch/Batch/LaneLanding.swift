#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif
import CCurl

/// What becomes of a probe the lane ran (``SmallFileLane``) once it ended. A file that came whole
/// gets what ``DownloadSession`` gives it: the same checks of the answer, a new `NAME.part`
/// (never an existing one, never through a link), its digests checked from memory, synced before
/// its rename, the rename's directory synced, then the journal's record and `finished`; it is
/// written and made durable on the commit line's thread (``CommitLine``). Any other entry goes on
/// to the workers, with the answer, or ends here with its failure.
///
/// The answer is read on the lane's thread: `-j` counts files started and not yet fetched, so an
/// entry that goes on to the workers must still count when the lane looks for room.
struct LaneLanding {
    let flight: SmallFileLane.Flight
    /// How the probe's request ended.
    let result: CURLcode
    let run: BatchRun
    /// The loop the probe ran on (the prober's; the request has left it).
    let loop: CurlLoop

    /// Reads the answer, and hands a file that came whole to `commits`, the others on.
    func land(on commits: CommitLine, now: Double) {
        let options = flight.options
        let prober = Prober(request: options.request, cancellation: run.cancellation, loop: loop, names: options.nameSource)
        let answer: Prober.Answer?
        do {
            answer = try prober.answer(flight.exchange, result: result)
        } catch where error.isTransient {
            // The workers' probe retries it, with the retry policy's waits.
            run.handoff.add(flight.taken)
            return
        } catch {
            // A failure the workers would only repeat.
            run.finish(flight.taken, outcome: .failure(error))
            run.filesActive.subtract(1, ordering: .relaxed)
            return
        }
        var taken = flight.taken
        taken.answer = answer
        guard let answer, write(answer, taken: taken, on: commits, now: now) else {
            run.handoff.add(taken)
            return
        }
        // Fetched: the next file may start; its report follows the sync.
        run.filesActive.subtract(1, ordering: .relaxed)
    }

    /// Hands a file that came whole to `commits`, which writes it to a new `NAME.part`; `false`
    /// when the answer asks for the usual path, which then says what is wrong (a digest that does
    /// not match is said, and the bytes kept aside, there).
    private func write(_ answer: Prober.Answer, taken: BatchRun.Taken, on commits: CommitLine, now: Double) -> Bool {
        let remote = answer.remote
        let options = flight.options
        let url = flight.source.requestURL
        guard answer.isWhole, remote.isSegmentable, remote.compositeChecksums == nil,
              remote.describedBy == nil || !options.verifyAdvertisedDigests,
              options.expectedSize.map({ $0 == remote.size }) ?? true,
              remote.redirectedTo.map({ !SourceAddress.downgradesToPlainHTTP(from: url, to: $0) }) ?? true,
              OutputPaths.path(options.destination, suggestedName: remote.suggestedName) == flight.final,
              run.claims.claim(flight.final, by: flight.taken.index) == nil else { return false }
        let expected = options.expectedDigests(for: remote)
        var verified: [DigestValue] = []
        if !expected.isEmpty {
            let digests = MultiDigest(expected.map(\.0.algorithm))
            answer.prefix.withUnsafeBytes { digests.update($0) }
            verified = digests.finalize()
            guard (try? DigestCheck.compare(expected: expected, actual: verified, path: flight.final)) != nil else { return false }
        }
        let run = self.run
        let checked = verified
        let place = WholeFile(final: flight.final, bytes: answer.prefix, directory: flight.directory,
                              privateMode: options.request.carriesCredentials(for: url))
        commits.add(to: place.final, bytes: answer.prefix.count, now: now) {
            guard let file = place.write() else {
                // Something at the name, or a write that failed: the usual path says what.
                run.filesActive.add(1, ordering: .relaxed)
                run.handoff.add(taken)
                return nil
            }
            run.emit(.file(index: taken.index, .probed(remote)))
            run.emit(.file(index: taken.index, .started(DownloadStart(path: place.final, totalBytes: place.size,
                                                                      resumedBytes: 0, segments: 1, connections: 1,
                                                                      segmented: false, adaptive: false))))
            for (want, source) in expected { run.emit(.file(index: taken.index, .verified(want, source: source))) }
            return CommitLine.Written(file: file) { file, failure in
                file.close()
                if let failure {
                    run.finish(taken, outcome: .failure(failure), path: place.final)
                    return
                }
                // Stale, as a small file's on the usual path.
                JournalStore(path: OutputPaths(chosen: place.final).journal).remove()
                let summary = DownloadSummary(path: place.final, bytes: place.size, transferredBytes: place.size, resumedBytes: 0,
                                              elapsedSeconds: MonotonicTime.now() - taken.began, verified: checked,
                                              alreadyComplete: false, segmented: false, verificationSeconds: nil)
                run.finish(taken, outcome: .success(summary), validators: (remote.etag, remote.lastModified))
            }
        }
        return true
    }
}

/// A file that came whole, to be written to a new `NAME.part` beside its final path.
private struct WholeFile: Sendable {
    let final: String
    let bytes: [UInt8]
    /// The directory it goes into, held open.
    let directory: DirectoryHandle?
    /// Created readable by its owner only until it is complete (a download with credentials).
    let privateMode: Bool

    var size: Int64 { Int64(bytes.count) }

    /// Creates `NAME.part` (never an existing one, never through a link), locks and writes it;
    /// `nil`, nothing left behind, when it cannot.
    func write() -> PartialFile? {
        let partial = OutputPaths(chosen: final).partial
        guard let file = try? PartialFile(path: partial, privateMode: privateMode, in: directory) else { return nil }
        guard file.created, (try? file.tryLock()) == true else {
            file.close()
            return nil
        }
        do throws(SystemCallError) {
            try bytes.withUnsafeBytes { raw in Result { () throws(SystemCallError) in try file.write(raw, at: 0) } }.get()
            if privateMode { try file.restoreUsualMode() }
        } catch {
            file.close()
            FileSystem.remove(partial)
            return nil
        }
        return file
    }
}
