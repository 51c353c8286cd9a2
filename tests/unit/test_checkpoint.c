#include <criterion/criterion.h>
Test(placeholder, pending) { cr_assert(1); }
