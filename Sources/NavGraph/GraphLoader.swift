import Foundation
import JSON
import RPC

/// One module file's text and the name diagnostics give it.
public struct GraphSource: Sendable {
    public var file: String
    public var text: String
    public init(file: String, text: String) {
        self.file = file
        self.text = text
    }
}

/// Bounds on what loading a graph may cost, so that a hostile or mistaken file cannot take the
/// daemon's memory or time: each is reported with a diagnostic naming the flag that sets it.
public struct GraphLimits: Sendable {
    /// The largest module file read, in bytes (`--max-graph-file`). Default 4 MiB, hundreds of times
    /// a real module's size.
    public var maxFileBytes = Limit.maxGraphFile.defaultValue
    /// The most bytes of all module files together (`--max-graph-bytes`). Default 64 MiB: with
    /// `maxFileBytes` alone, `maxFiles` files could be 40 GB, read before anything is checked.
    public var maxTotalBytes = Limit.maxGraphBytes.defaultValue
    /// The most YAML nodes all module files together may expand to, aliases counted each time they
    /// are used (`--max-graph-nodes`). Default 1,000,000: a 600-byte alias bomb expands to 10^10,
    /// and every file's nodes are held until the graph is built.
    public var maxNodes = Limit.maxGraphNodes.defaultValue
    /// The most edges a graph may hold once its ability sets and guards are expanded
    /// (`--max-graph-edges`): each coordinator's opens, a set counting each of its coordinators, and
    /// each guard once per coordinator. Default 500,000: a set names many coordinators in one
    /// word, and a guard applies to all, so a 300 KB file could describe 10^8 of them; at the default
    /// `graph.describe` still fits in a client's `--max-output`.
    public var maxEdges = Limit.maxGraphEdges.defaultValue
    /// The most module files read from a graph directory. Default 10,000.
    public var maxFiles = 10_000
    public init() {}
}

/// Loads module files into a ``NavigationGraph``, reporting every problem like a compiler.
public enum GraphLoader {
    public static let extensions: Set<String> = ["yaml", "yml", "json"]

    /// Whether a directory entry is named as a module file is: `*.yaml`, `*.yml` or `*.json` (in any
    /// case), and not hidden, as a shell's `*.yaml` leaves hidden files out: editors keep lock and
    /// backup files beside the one being edited (Emacs's `.#app.yaml`, a link to nowhere; macOS's
    /// `._app.yaml`), and a graph must load while one is open.
    public static func isModuleFileName(_ name: String) -> Bool {
        !name.hasPrefix(".") && extensions.contains((name as NSString).pathExtension.lowercased())
    }

    /// Loads every `*.yaml`, `*.yml` and `*.json` file of `directory` (hidden ones aside).
    /// Only regular files are read (a symbolic link is followed to one), each at most
    /// `limits.maxFileBytes`: a FIFO or a device named `*.yaml` is refused, not read.
    public static func load(directory: String, limits: GraphLimits = GraphLimits()) -> (graph: NavigationGraph?, diagnostics: Diagnostics) {
        var d = Diagnostics()
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: directory, isDirectory: &isDir), isDir.boolValue else {
            d.error(SourceLocation(file: directory, line: 1, column: 1),
                    "`\(directory)` is not a directory; --graph takes the folder that holds the module files (*.yaml, *.yml, *.json)")
            return (nil, d)
        }
        if let why = writableByAnyone(directory) {
            d.error(SourceLocation(file: directory, line: 1, column: 1), "the graph's directory \(why)\(volumeHint(directory))")
        }
        let entries = (try? fm.contentsOfDirectory(atPath: directory)) ?? []
        let names = entries.filter(isModuleFileName).sorted()
        warnOfSubdirectories(entries, of: directory, limits: limits, &d)
        if names.count > limits.maxFiles {
            d.error(SourceLocation(file: directory, line: 1, column: 1),
                    "`\(directory)` holds \(names.count) module files; a graph may have at most \(limits.maxFiles)")
            return (nil, d)
        }
        var sources: [GraphSource] = []
        var total = 0
        for n in names {
            let path = (directory as NSString).appendingPathComponent(n)
            // Opened without waiting (a FIFO put in its place after a look at it would block the
            // open), and what was opened is what is checked.
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            if fd < 0 && errno != ENOENT && errno != ELOOP {
                d.error(SourceLocation(file: path, line: 1, column: 1), "cannot read the file: \(String(cString: strerror(errno)))")
                continue
            }
            var st = stat()
            guard fd >= 0, fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
                if fd >= 0 { close(fd) }
                d.error(SourceLocation(file: path, line: 1, column: 1), "not a regular file (a directory, a device, a FIFO or a broken link); module files are plain text files")
                continue
            }
            let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            if let why = writableByAnyone(path) {
                d.error(SourceLocation(file: path, line: 1, column: 1), "the module file \(why)")
                continue
            }
            guard Int(st.st_size) <= limits.maxFileBytes else {
                d.error(SourceLocation(file: path, line: 1, column: 1),
                        "the file is \(st.st_size) bytes; a module file may be at most \(limits.maxFileBytes) (the --max-graph-file limit)")
                continue
            }
            guard total + Int(st.st_size) <= limits.maxTotalBytes else {
                d.error(SourceLocation(file: path, line: 1, column: 1), tooLarge(total: total, adding: Int(st.st_size), limits))
                return (nil, d)
            }
            guard let data = try? handle.read(upToCount: limits.maxFileBytes + 1) ?? Data() else {
                d.error(SourceLocation(file: path, line: 1, column: 1), "cannot read the file")
                continue
            }
            guard data.count <= limits.maxFileBytes else {
                d.error(SourceLocation(file: path, line: 1, column: 1),
                        "the file grew past \(limits.maxFileBytes) bytes while it was read (the --max-graph-file limit)")
                continue
            }
            guard total + data.count <= limits.maxTotalBytes else {
                d.error(SourceLocation(file: path, line: 1, column: 1), tooLarge(total: total, adding: data.count, limits))
                return (nil, d)
            }
            total += data.count
            guard let text = String(data: data, encoding: .utf8) else {
                d.error(SourceLocation(file: path, line: 1, column: 1), "the file is not UTF-8 text")
                continue
            }
            sources.append(GraphSource(file: path, text: text))
        }
        if sources.isEmpty && !d.hasErrors {
            d.error(SourceLocation(file: directory, line: 1, column: 1),
                    "no module files in `\(directory)`: a graph is one or more *.yaml, *.yml or *.json files")
            return (nil, d)
        }
        let (g, more) = load(sources: sources, baseDirectory: directory, limits: limits)
        d.append(contentsOf: more)
        if let g { checkCommandPrograms(g, &d) }
        return (d.hasErrors ? nil : g, d)
    }

    /// Why a graph is refused when a module file of `adding` bytes would bring its files past
    /// `limits.maxTotalBytes`, `total` bytes being read already.
    static func tooLarge(total: Int, adding: Int, _ limits: GraphLimits) -> String {
        "with this file of \(adding) bytes the graph's module files would be \(total + adding) bytes together; a graph may be at most \(limits.maxTotalBytes) (the --max-graph-bytes limit): make the modules smaller, or raise the limit for a graph this large"
    }

    /// What a load of `directory` would read, as the system describes it without reading a file:
    /// where the directory leads (its links followed), its identity and mode, and each module file's
    /// name, identity, size, mode and change times. Two equal fingerprints mean a load would read the
    /// same files (a file written, renamed over, added, removed, re-linked or made writable changes
    /// it); `--watch-graph` reloads only when it changed, so an editor's swap file or a lock taken and
    /// released reloads nothing. Stats at most `limits.maxFiles` files, as a load reads.
    public static func fingerprint(directory: String, limits: GraphLimits = GraphLimits()) -> GraphFingerprint {
        var f = GraphFingerprint()
        guard let resolved = realpath(directory, nil) else { return f }
        f.directory = String(cString: resolved)
        free(resolved)
        var st = stat()
        guard stat(f.directory, &st) == 0 else { return f }
        f.stats.append(contentsOf: GraphFingerprint.fields(st, times: false))
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: f.directory)) ?? []).filter(isModuleFileName).sorted()
        for name in names.prefix(limits.maxFiles + 1) {
            f.names.append(name)
            if stat((f.directory as NSString).appendingPathComponent(name), &st) == 0 {
                f.stats.append(contentsOf: GraphFingerprint.fields(st, times: true))
            } else {
                f.stats.append(contentsOf: [0, 0, 0, 0, 0, 0, 0, 0])
            }
        }
        return f
    }

    /// Why every user may change `path` (a module file, the graph's directory, a program its
    /// commands run, a directory on its way), or nil: a graph says what navd runs (its command
    /// preconditions), so a graph anyone may change would let anyone run code as navd's user.
    /// World-writable files and directories are refused (a sticky directory too: anyone may still
    /// add a module file to it); a group's write (a shared checkout) is the owner's choice.
    static func writableByAnyone(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & S_IWOTH != 0 else { return nil }
        let mode = "0" + String(st.st_mode & 0o7777, radix: 8)
        return "is writable by every user (mode \(mode)): anyone could change what navd runs (its command preconditions) as its user; chmod o-w \(path)"
    }

    /// For a world-writable graph directory that is a Kubernetes ConfigMap or Secret volume (its
    /// mount point is mode 1777, which a pod cannot change, and its files are links into `..data`):
    /// the directory to give instead. Else "".
    static func volumeHint(_ directory: String) -> String {
        var st = stat()
        let data = (directory as NSString).appendingPathComponent("..data")
        guard lstat(data, &st) == 0, (st.st_mode & S_IFMT) == S_IFLNK, writableByAnyone(data) == nil else { return "" }
        return "; it looks like a Kubernetes ConfigMap or Secret volume, whose mount point a pod cannot chmod: give --graph \(data) instead, the directory its files link to, which others cannot write (--watch-graph follows it when the volume is updated)"
    }

    /// A command's program given relative to the graph's directory (`scripts/in-stock.sh`) runs
    /// from it: it and the directories between them must not be writable by every user either.
    private static func checkCommandPrograms(_ g: NavigationGraph, _ d: inout Diagnostics) {
        var seen: Set<String> = []
        for p in g.preconditions {
            var argvs: [[String]] = []
            if case .command(let argv, _) = p.kind { argvs.append(argv) }
            if case .command(let argv, _)? = p.recover { argvs.append(argv) }
            for argv in argvs {
                guard let program = argv.first, program.contains("/"), !program.hasPrefix("/"), seen.insert(program).inserted else { continue }
                var path = g.baseDirectory
                let parts = program.split(separator: "/")
                for part in parts {
                    path += "/" + part
                    if let why = writableByAnyone(path) {
                        d.error(p.location, "`\(program)`, which precondition `\(p.name)` runs: \(path) \(why)")
                        break
                    }
                }
            }
        }
    }

    /// A graph is the module files directly in its directory. A subdirectory holding files named as
    /// module files are (`features/cart.yaml`) is not read; each such subdirectory gets a warning
    /// naming some of them, so that a module left there is not missed without a word. Hidden
    /// entries (`.git`) are passed over; at most `limits.maxFiles` entries are looked at in all,
    /// those of the directory and of its subdirectories together (read a name at a time).
    private static func warnOfSubdirectories(_ entries: [String], of directory: String, limits: GraphLimits, _ d: inout Diagnostics) {
        var budget = limits.maxFiles
        for entry in entries.sorted() where !entry.hasPrefix(".") {
            guard budget > 0 else { return }
            budget -= 1
            let path = (directory as NSString).appendingPathComponent(entry)
            var st = stat()
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, let listing = opendir(path) else { continue }
            var modules: [String] = []
            while budget > 0, let e = readdir(listing) {
                budget -= 1
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if isModuleFileName(name) { modules.append(name) }
            }
            closedir(listing)
            guard !modules.isEmpty else { continue }
            modules.sort()
            let shown = modules.prefix(3).map { "`\(entry)/\($0)`" }.joined(separator: ", ") + (modules.count > 3 ? " and \(modules.count - 3) more" : "")
            d.warning(SourceLocation(file: path, line: 1, column: 1),
                      "\(shown) \(modules.count == 1 ? "is" : "are") not read: a graph is the module files directly in `\(directory)`, not in its subdirectories; move a module up to use it")
        }
    }

    /// Loads module files given as text (`file` names them in diagnostics; its stem is the
    /// module's default name).
    public static func load(sources: [GraphSource], baseDirectory: String,
                            limits: GraphLimits = GraphLimits()) -> (graph: NavigationGraph?, diagnostics: Diagnostics) {
        var b = Builder(baseDirectory: baseDirectory)
        b.limits = limits
        let g = b.build(sources)
        return (b.d.hasErrors ? nil : g, b.d)
    }
}

extension Diagnostics {
    mutating func append(contentsOf other: Diagnostics) {
        for x in other.all {
            if x.severity == .error { error(x.location, x.message) } else { warning(x.location, x.message) }
        }
    }
}

extension GraphLoader {
    /// The example app compiled into navd (Examples/shop), used when navd starts without --graph.
    public static func loadEmbeddedExample(baseDirectory: String = "<embedded example>") -> (graph: NavigationGraph?, diagnostics: Diagnostics) {
        load(sources: EmbeddedExample.files.map { GraphSource(file: $0.name, text: $0.text) }, baseDirectory: baseDirectory)
    }
}

/// What ``GraphLoader/fingerprint(directory:limits:)`` saw of a graph's directory: equal when a
/// load would read the same files.
public struct GraphFingerprint: Equatable, Sendable {
    /// The directory, its symbolic links resolved ("" when it cannot be resolved).
    public var directory = ""
    /// The module files' names, sorted.
    public var names: [String] = []
    /// The directory's device, inode and mode, then each file's device, inode, mode, size and
    /// modification and change times (seconds and nanoseconds).
    var stats: [Int64] = []

    public init() {}

    static func fields(_ st: stat, times: Bool) -> [Int64] {
        let ids = [Int64(bitPattern: UInt64(st.st_dev)), Int64(bitPattern: UInt64(st.st_ino)), Int64(st.st_mode)]
        guard times else { return ids }
        return ids + [Int64(st.st_size), Int64(st.st_mtim.tv_sec), Int64(st.st_mtim.tv_nsec),
                      Int64(st.st_ctim.tv_sec), Int64(st.st_ctim.tv_nsec)]
    }
}
