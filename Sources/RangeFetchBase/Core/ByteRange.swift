/// A half-open range of byte offsets `lower..<upper` within a remote file.
///
/// This is the only type that turns offsets into the inclusive `bytes=first-last` form HTTP uses,
/// so off-by-one mistakes have exactly one place to live.
public struct ByteRange: Hashable, Sendable, Codable, CustomStringConvertible {
    /// First byte offset in the range.
    public var lower: Int64
    /// One past the last byte offset.
    public var upper: Int64

    /// Creates `lower..<upper`. `lower` must not exceed `upper`.
    public init(_ lower: Int64, _ upper: Int64) {
        precondition(lower >= 0 && lower <= upper, "invalid byte range \(lower)..<\(upper)")
        self.lower = lower
        self.upper = upper
    }

    /// Number of bytes in the range.
    public var count: Int64 { upper - lower }
    /// Whether it holds no byte.
    public var isEmpty: Bool { lower == upper }

    /// The value of an HTTP `Range` header for this range, without the `bytes=` unit
    /// (as `CURLOPT_RANGE` expects): `0..<10` becomes `0-9`. Empty ranges have no HTTP form.
    public var httpRangeSpec: String {
        precondition(!isEmpty, "an empty range cannot be requested")
        return "\(lower)-\(upper - 1)"
    }

    /// The range from `offset` to this range's end; `offset` is clamped into the range.
    public func suffix(from offset: Int64) -> ByteRange {
        ByteRange(min(max(offset, lower), upper), upper)
    }

    /// `[lower, upper)`.
    public var description: String { "[\(lower), \(upper))" }
}

extension ByteRange {
    /// `ranges` sorted, empty ones dropped, and touching or overlapping ones joined.
    package static func merged(_ ranges: [ByteRange]) -> [ByteRange] {
        var merged: [ByteRange] = []
        for range in ranges.sorted(by: { $0.lower < $1.lower }) where !range.isEmpty {
            if let last = merged.last, range.lower <= last.upper {
                merged[merged.count - 1] = ByteRange(last.lower, max(last.upper, range.upper))
            } else {
                merged.append(range)
            }
        }
        return merged
    }

    /// The bytes of `ranges` that also lie in `within`, merged.
    package static func clipped(_ ranges: [ByteRange], to within: [ByteRange]) -> [ByteRange] {
        let bounds = merged(within)
        var clipped: [ByteRange] = []
        for range in merged(ranges) {
            for bound in bounds where bound.lower < range.upper && range.lower < bound.upper {
                clipped.append(ByteRange(max(bound.lower, range.lower), min(bound.upper, range.upper)))
            }
        }
        return clipped
    }
}
