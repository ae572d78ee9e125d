#if canImport(Glibc)
import Glibc
#endif

/// What the terminal allows: its width, and whether emphasis (bold) is welcome.
enum Terminal {
    /// Columns to fit: `COLUMNS` when set to a positive number (an explicit choice), else the
    /// terminal's width (`TIOCGWINSZ` on stderr, then stdout), else `fallback`.
    static func width(fallback: Int = 80) -> Int {
        if let text = getenv("COLUMNS").map({ String(cString: $0) }), let columns = Int(text), columns > 0 {
            return columns
        }
        for descriptor in [STDERR_FILENO, STDOUT_FILENO] {
            var size = winsize()
            if ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        }
        return fallback
    }

    /// Whether to use bold on `descriptor`: only on a terminal, and never when `NO_COLOR` is set
    /// to anything (https://no-color.org) or `TERM` is `dumb`.
    static func allowsEmphasis(on descriptor: Int32) -> Bool {
        guard isatty(descriptor) != 0, getenv("NO_COLOR") == nil else { return false }
        if let term = getenv("TERM").map({ String(cString: $0) }), term == "dumb" { return false }
        return true
    }

    /// `text` in bold when `enabled`.
    static func bold(_ text: String, enabled: Bool) -> String {
        enabled ? "\u{1B}[1m" + text + "\u{1B}[0m" : text
    }
}
