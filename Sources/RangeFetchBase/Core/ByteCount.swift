/// Parses and formats human byte counts such as `4M`, `1.5G` or `512k` (binary multiples).
package enum ByteCount {
    /// Parses a non-negative size with an optional K/M/G/T suffix (powers of 1024; an optional
    /// trailing `B` or `iB` is accepted). Returns `nil` for anything else, including overflow.
    public static func parse(_ text: String) -> Int64? {
        var body = Substring(text.trimmingASCIIWhitespace()).lowercased()[...]
        if body.hasSuffix("ib") { body = body.dropLast(2) } else if body.hasSuffix("b") { body = body.dropLast() }
        var multiplier: Double = 1
        if let last = body.last, let power = "kmgt".firstIndex(of: last) {
            multiplier = pow1024("kmgt".distance(from: "kmgt".startIndex, to: power) + 1)
            body = body.dropLast()
        }
        guard !body.isEmpty, body.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              let value = Double(body), value >= 0 else { return nil }
        let bytes = (value * multiplier).rounded()
        guard bytes < 9.2e18 else { return nil }
        return Int64(bytes)
    }

    /// Formats bytes with one decimal and a binary unit: `1.5 MiB`.
    public static func format(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        return "\(formatDecimal(value, places: 1)) \(units[unit])"
    }

    private static func pow1024(_ exponent: Int) -> Double {
        (0..<exponent).reduce(1.0) { result, _ in result * 1024 }
    }
}

/// Formats `value` with a fixed number of decimal places without Foundation's locale machinery.
public func formatDecimal(_ value: Double, places: Int) -> String {
    guard value.isFinite else { return "-" }
    var scale = 1.0
    for _ in 0..<places { scale *= 10 }
    let scaled = Int64((abs(value) * scale).rounded())
    let whole = scaled / Int64(scale)
    var fraction = String(scaled % Int64(scale))
    while fraction.count < places { fraction = "0" + fraction }
    let sign = value < 0 && scaled != 0 ? "-" : ""
    return places == 0 ? "\(sign)\(whole)" : "\(sign)\(whole).\(fraction)"
}

extension String {
    package func trimmingASCIIWhitespace() -> Substring {
        // "\r\n" is one Character in Swift, so test every scalar of the character.
        let isSpace: (Character) -> Bool = { $0.unicodeScalars.allSatisfy { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" } }
        guard let first = firstIndex(where: { !isSpace($0) }),
              let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[first...last]
    }
}

extension Substring {
    package func trimmingCharacters() -> Substring {
        String(self).trimmingASCIIWhitespace()
    }
}
