"""What is computed from records: statistics (stats), the identity and
description of points (points), comparisons and the regression gate
(compare)."""
