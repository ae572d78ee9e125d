/// Blanks the value of `-u`/`--user` in the process's own argument memory once it has been read,
/// as curl does, so `ps` and `/proc/PID/cmdline` do not show the password for the whole download.
enum SecretArguments {
    /// Options whose value is a secret.
    static let options: Set<String> = ["-u", "--user"]

    /// Overwrites each secret value in `CommandLine.unsafeArgv` with `*`. Call after
    /// `CommandLine.arguments` has been read (it copies the arguments).
    static func blank() {
        let count = Int(CommandLine.argc)
        let argv = CommandLine.unsafeArgv
        var index = 1
        while index < count {
            guard let pointer = argv[index] else { break }
            let argument = String(cString: pointer)
            if argument == "--" { return }
            if options.contains(argument), index + 1 < count, let value = argv[index + 1] {
                overwrite(value, from: 0)
                index += 2
                continue
            }
            if argument.hasPrefix("--user=") {
                overwrite(pointer, from: "--user=".utf8.count)
            } else if argument.hasPrefix("-u"), !argument.hasPrefix("--"), argument.utf8.count > 2 {
                overwrite(pointer, from: 2)
            }
            index += 1
        }
    }

    private static func overwrite(_ pointer: UnsafeMutablePointer<CChar>, from start: Int) {
        var offset = start
        while pointer[offset] != 0 {
            pointer[offset] = 0x2A // "*"
            offset += 1
        }
    }
}
