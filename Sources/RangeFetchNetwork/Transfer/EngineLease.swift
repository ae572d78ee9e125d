import RangeFetchBase

/// The engine's share of a batch's connection budget (``ConnectionLease``): a connection to a
/// source's host is taken before each request starts and given back when it ends. Without a
/// budget (a download alone) every request may start.
package struct EngineLease {
    package let lease: ConnectionLease?
    /// The host (origin) of each source.
    package let origin: (SourceID) -> String

    /// Takes a connection for a request to `id`; `false` when the budget has none.
    package func acquire(_ id: SourceID) -> Bool {
        lease?.acquire(host: origin(id)) ?? true
    }

    /// Gives back the connection of a request to `id`.
    package func release(_ id: SourceID) {
        lease?.release(host: origin(id))
    }

    /// Whether a request may start at `id` (`nil`: no source would take it) with a connection to
    /// its host: taken now, or, when a split took one to the main host already (`leased`), that
    /// one kept or traded for one to `id`'s host. A connection taken and not used is given back.
    package func take(for id: SourceID?, leased: Bool) -> Bool {
        guard let id else {
            if leased { release(.main) }
            return false
        }
        if leased && id.isMain { return true }
        if leased { release(.main) }
        return acquire(id)
    }

    package init(lease: ConnectionLease?, origin: @escaping (SourceID) -> String) {
        self.lease = lease
        self.origin = origin
    }
}
