/// The decisions of a worker that follows a file's written prefix on a serial queue
/// (``OrderedStream`` sending it, ``PrefixHasher`` hashing it): the prefix grows to a target,
/// one drain at a time is scheduled, the drain runs until it has caught up with the target,
/// and a failure stops it for good.
///
/// A pure value kept under its owner's lock; the owner keeps how far it has got (`done`) and
/// does the scheduling (`queue.async`) and the work.
package struct PrefixFollower {
    /// How far the written prefix reaches; never goes back.
    package private(set) var target: Int64 = 0
    /// Whether a drain is scheduled or running.
    package private(set) var scheduled: Bool = false
    /// Why following stopped for good.
    package private(set) var failure: SystemCallError?

    /// The prefix now reaches `end` and the owner has got to `done`: `true` when the owner must
    /// schedule a drain (none is scheduled or running, none failed, and there is work).
    package mutating func advance(to end: Int64, done: Int64) -> Bool {
        target = max(target, end)
        guard !scheduled, failure == nil, target > done else { return false }
        scheduled = true
        return true
    }

    /// Asked by the drain, having got to `done`: where to follow to next, or `nil` when it has
    /// caught up (or failed), in which case the drain ends and a later ``advance(to:done:)``
    /// schedules the next.
    package mutating func next(done: Int64) -> Int64? {
        guard failure == nil, target > done else {
            scheduled = false
            return nil
        }
        return target
    }

    /// The drain ends early for a reason of its owner's (cancelled, nothing left to do it with);
    /// a later ``advance(to:done:)`` schedules the next.
    package mutating func pause() {
        scheduled = false
    }

    /// The drain failed: it ends and no other is scheduled.
    package mutating func fail(_ error: SystemCallError) {
        failure = error
        scheduled = false
    }

    package init(target: Int64 = 0, scheduled: Bool = false, failure: SystemCallError? = nil) {
        self.target = target
        self.scheduled = scheduled
        self.failure = failure
    }
}
