//===----------------------------------------------------------------------===//
// quiver — the loader shim: this is what quiver.duckdb_extension itself contains.
//
// Why: Python imports DuckDB's module with RTLD_LOCAL and DuckDB dlopens extensions with
// RTLD_LOCAL, so a C++ extension that leaves DuckDB's symbols undefined cannot be opened at
// all ("undefined symbol: _ZTIN6duckdb14SimpleFunctionE"). This shim references no DuckDB
// symbol, so DuckDB can open it anywhere. When DuckDB calls its entry point it:
//   1. finds the library that called it (the host DuckDB) from the return address;
//   2. asks that library for DuckDB::SourceID() through dlsym and refuses any build other
//      than the one quiver was compiled against, before anything layout-dependent runs;
//   3. copies the real extension, embedded in this file, into an anonymous memory file,
//      writing the host's path over the placeholder that the real extension names as a
//      needed library (DT_NEEDED); the dynamic loader matches that name to the host that is
//      already loaded, so the real extension's DuckDB symbols bind to exactly that host, and
//      nothing is made global: other libraries in the process are unaffected;
//   4. dlopens that copy and forwards the call to its quiver_impl_init.
// Fallback: a host path too long for the placeholder is promoted to RTLD_GLOBAL instead (dlopen
// RTLD_NOLOAD, so nothing new is loaded); a host that is the main program (a CLI linked with
// -rdynamic) has its symbols global already.
// Errors are thrown as std::runtime_error: DuckDB's loader catches std::exception and
// reports it as a failed LOAD, so a mismatched host gets a message, never a crash.
//
// No DuckDB header may be included here.
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#if !defined(QUIVER_DUCKDB_SOURCE_ID) || !defined(QUIVER_HOST_PLACEHOLDER_PREFIX) ||                             \
    !defined(QUIVER_HOST_PLACEHOLDER_BYTES)
#error "the Makefile passes QUIVER_DUCKDB_SOURCE_ID and QUIVER_HOST_PLACEHOLDER_{PREFIX,BYTES}"
#endif

// The real extension's bytes, placed by build/obj/impl_blob.S (.incbin, see the Makefile).
extern "C" const unsigned char quiver_impl_start[];
extern "C" const unsigned char quiver_impl_end[];

namespace {

// Mangled names of `static const char *duckdb::DuckDB::SourceID()` and `::LibraryVersion()`,
// stable across DuckDB releases (they are part of its C++ API).
constexpr const char *SOURCE_ID_SYMBOL = "_ZN6duckdb6DuckDB8SourceIDEv";
constexpr const char *LIBRARY_VERSION_SYMBOL = "_ZN6duckdb6DuckDB14LibraryVersionEv";
constexpr const char *IMPL_INIT_SYMBOL = "quiver_impl_init";

using string_fn_t = const char *(*)();
using impl_init_t = void (*)(void *loader, const void *host_base);

[[noreturn]] void Fail(const std::string &message) {
	throw std::runtime_error("quiver: " + message);
}

struct Host {
	std::string path;
	const void *base;
	void *handle;
	bool is_main_program; // its exported symbols are global already
};

//! The library containing `caller`, which must be a DuckDB that exports its C++ symbols.
Host FindHost(const void *caller) {
	Dl_info info {};
	if (!dladdr(caller, &info) || !info.dli_fname || !info.dli_fbase) {
		Fail("cannot tell which library called the entry point");
	}
	Host host {info.dli_fname, info.dli_fbase, nullptr, false};
	// RTLD_NOLOAD: a handle on the library that is already there, never a second copy.
	host.handle = dlopen(host.path.c_str(), RTLD_NOW | RTLD_NOLOAD);
	if (!host.handle) {
		host.handle = dlopen(nullptr, RTLD_NOW); // the host is the main program (e.g. the duckdb CLI)
		host.is_main_program = true;
	}
	auto source_id = reinterpret_cast<string_fn_t>(dlsym(host.handle, SOURCE_ID_SYMBOL));
	Dl_info source_id_info {};
	if (!source_id || !dladdr(reinterpret_cast<void *>(source_id), &source_id_info) ||
	    source_id_info.dli_fbase != host.base) {
		Fail("the library that loaded quiver (" + host.path +
		     ") does not export DuckDB's C++ API (duckdb::DuckDB::SourceID); quiver needs a DuckDB build that does");
	}
	return host;
}

void CheckSourceId(const Host &host) {
	auto source_id = reinterpret_cast<string_fn_t>(dlsym(host.handle, SOURCE_ID_SYMBOL));
	auto library_version = reinterpret_cast<string_fn_t>(dlsym(host.handle, LIBRARY_VERSION_SYMBOL));
	std::string got = source_id();
	if (got != QUIVER_DUCKDB_SOURCE_ID) {
		std::string version = library_version ? library_version() : "an unknown version";
		Fail("this build of quiver needs DuckDB v2.0.0 with source id " QUIVER_DUCKDB_SOURCE_ID
		     " (the PyPI duckdb==2.0.0 wheel), but it was loaded into DuckDB " +
		     version + " with source id " + got + " (" + host.path +
		     "); a C++ extension only works with the exact DuckDB build it was compiled against, so quiver "
		     "refuses to load rather than crash");
	}
}

//! Writes `needed` (NUL-terminated) over the one DT_NEEDED placeholder in the real extension's image.
void PatchPlaceholder(std::vector<unsigned char> &image, const std::string &needed) {
	const std::string prefix = QUIVER_HOST_PLACEHOLDER_PREFIX;
	unsigned char *const end = image.data() + image.size();
	auto found = static_cast<unsigned char *>(memmem(image.data(), image.size(), prefix.data(), prefix.size()));
	const size_t capacity = QUIVER_HOST_PLACEHOLDER_BYTES; // placeholder characters, NUL not included
	if (!found || static_cast<size_t>(end - found) <= capacity || found[capacity] != '\0' ||
	    memmem(found + 1, static_cast<size_t>(end - found - 1), prefix.data(), prefix.size())) {
		Fail("the embedded implementation does not carry exactly one host placeholder (a build problem)");
	}
	if (needed.size() >= capacity) {
		Fail("internal error: host path longer than the placeholder");
	}
	memcpy(found, needed.c_str(), needed.size() + 1);
}

//! dlopen the real extension from `image` in an anonymous file (a temporary file where memfd is missing).
void *LoadImpl(const std::vector<unsigned char> &image) {
	const unsigned char *bytes = image.data();
	const size_t size = image.size();
	std::string path;
	int fd = memfd_create("quiver_impl.so", MFD_CLOEXEC);
	bool temporary_file = false;
	if (fd >= 0) {
		path = "/proc/self/fd/" + std::to_string(fd);
	} else {
		const char *tmp = getenv("TMPDIR");
		path = std::string(tmp && *tmp ? tmp : "/tmp") + "/quiver_impl.XXXXXX";
		fd = mkstemp(&path[0]);
		if (fd < 0) {
			Fail("cannot create a file for the embedded implementation: " + std::string(strerror(errno)));
		}
		temporary_file = true;
	}
	size_t written = 0;
	while (written < size) {
		auto n = write(fd, bytes + written, size - written);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			int error = errno;
			close(fd);
			Fail("cannot write the embedded implementation: " + std::string(strerror(error)));
		}
		written += static_cast<size_t>(n);
	}
	void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
	std::string error = handle ? "" : dlerror();
	if (temporary_file) {
		unlink(path.c_str());
	}
	close(fd); // the mapping outlives the descriptor
	if (!handle) {
		Fail("cannot load the embedded implementation: " + error);
	}
	return handle;
}

std::mutex bind_mutex;
const void *bound_host_base = nullptr; // guarded by bind_mutex
std::string bound_host_path;           // guarded by bind_mutex
impl_init_t impl_init = nullptr;       // guarded by bind_mutex

//! The real entry point of the host `host`, loading and binding it on first use.
impl_init_t Bind(const Host &host) {
	std::lock_guard<std::mutex> lock(bind_mutex);
	if (impl_init) {
		if (bound_host_base != host.base) {
			Fail("already bound to the DuckDB in " + bound_host_path + "; cannot also serve " + host.path +
			     " in the same process");
		}
		return impl_init;
	}
	std::vector<unsigned char> image(quiver_impl_start, quiver_impl_end);
	if (!host.is_main_program && host.path.size() < QUIVER_HOST_PLACEHOLDER_BYTES) {
		PatchPlaceholder(image, host.path); // bound to the host by name: it is already loaded, under this name
	} else {
		PatchPlaceholder(image, "libc.so.6"); // a harmless, already loaded library
		if (!host.is_main_program && !dlopen(host.path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) {
			Fail("cannot make " + host.path + " visible to the extension: " + std::string(dlerror()));
		}
	}
	void *impl = LoadImpl(image);
	auto init = reinterpret_cast<impl_init_t>(dlsym(impl, IMPL_INIT_SYMBOL));
	if (!init) {
		Fail("the embedded implementation has no " + std::string(IMPL_INIT_SYMBOL));
	}
	bound_host_base = host.base;
	bound_host_path = host.path;
	impl_init = init;
	return impl_init;
}

} // namespace

extern "C" {

//! The entry point DuckDB looks up for a C++-ABI extension named "quiver"
//! (DUCKDB_CPP_EXTENSION_ENTRY(quiver, loader)); `loader` is a duckdb::ExtensionLoader &.
__attribute__((visibility("default"), noinline)) void quiver_duckdb_cpp_init(void *loader) {
	Host host = FindHost(__builtin_return_address(0));
	CheckSourceId(host);
	Bind(host)(loader, host.base);
}
}
