// Built only by the layers_permitted test, as part of module core: its own headers are found,
// so layers_enforced fails for the include alone.
#include "core/text.hpp"
