/* id: see id.h. */
#include "id.h"

#include <ctype.h>
#include <string.h>

#include "ptg_limits.h"

bool id_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > PTG_ID_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._~:@-", s[i]))
			return false;
	return true;
}
