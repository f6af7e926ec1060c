// Built only by the layers_enforced test, as part of module core: core sits below report, so
// this include must not be found and the file must not compile (lib/CMakeLists.txt).
#include "report/report.hpp"
