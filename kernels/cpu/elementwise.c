/* The element-wise chain lives in normalize.c beside the other arithmetic kernels. */
