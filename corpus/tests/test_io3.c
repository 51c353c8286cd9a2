/* stub */
#include <criterion/criterion.h>
#include "harness.h"
SL_CORPUS_STANDARD_TESTS(io3_w50, "IO-3", "w50")
