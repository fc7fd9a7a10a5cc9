/* The SVM backend's name (kept apart from svm.c). */
#include "vmm/vendor.h"

const char *vendor_name(void)
{
	return "AMD SVM";
}
