//===----------------------------------------------------------------------===//
// quiver — the extension's real entry point, called by the loader shim (loader_shim.cpp).
//
// It checks, then registers; nothing else:
//  - the host is the DuckDB build these headers come from (DuckDB::SourceID());
//  - this library's DuckDB symbols were bound to that same host library;
//  - the Rust core speaks the C ABI version of quiver_core.h.
//===----------------------------------------------------------------------===//
#include <dlfcn.h>

#include "duckdb/common/exception.hpp"
#include "duckdb/main/database.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "quiver_core.h"
#include "quiver_functions.hpp"

#ifndef QUIVER_DUCKDB_SOURCE_ID
#error "the Makefile passes -DQUIVER_DUCKDB_SOURCE_ID=\"<source id of the headers>\""
#endif

namespace duckdb {
namespace quiver {

static void CheckHost(const void *host_base) {
	const string source_id = DuckDB::SourceID();
	if (source_id != QUIVER_DUCKDB_SOURCE_ID) {
		throw InvalidInputException("quiver was built for DuckDB source id %s but is loaded into %s (source id %s)",
		                            QUIVER_DUCKDB_SOURCE_ID, DuckDB::LibraryVersion(), source_id);
	}
	Dl_info info;
	auto symbol = reinterpret_cast<const void *>(&DuckDB::SourceID);
	if (host_base && (!dladdr(symbol, &info) || info.dli_fbase != host_base)) {
		throw InvalidInputException("quiver's DuckDB symbols resolved into %s, not into the DuckDB library that loaded "
		                            "it; is a second DuckDB library loaded into this process with RTLD_GLOBAL?",
		                            info.dli_fname ? info.dli_fname : "an unknown library");
	}
	if (quiver_core_abi_version() != QUIVER_CORE_ABI_VERSION) {
		throw InternalException("quiver core speaks C ABI %u, the glue expects %u", quiver_core_abi_version(),
		                        static_cast<uint32_t>(QUIVER_CORE_ABI_VERSION));
	}
}

} // namespace quiver
} // namespace duckdb

extern "C" {

//! Called by the shim with the host's ExtensionLoader and the load address of the host DuckDB library
//! (null when unknown). Exceptions propagate to DuckDB's loader, which reports them as a failed LOAD.
DUCKDB_EXTENSION_API void quiver_impl_init(duckdb::ExtensionLoader &loader, const void *host_base) {
	duckdb::quiver::CheckHost(host_base);
	duckdb::quiver::RegisterVersionFunction(loader);
#ifdef QUIVER_BENCH_FUNCTIONS
	// The bench flavour only (extension/build.sh with QUIVER_BENCH_FUNCTIONS=1).
	duckdb::quiver::RegisterNumbersFunction(loader);
	duckdb::quiver::RegisterArrowDrainFunction(loader);
#endif
	duckdb::quiver::RegisterStorage(loader);
	duckdb::quiver::RegisterServerFunctions(loader);
}
}
