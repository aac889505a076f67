package classify

import "slices"

// ByStep returns the coverage and mean size of the sets set(f) of the
// labelled forecasts fs by row (Forecast.Row, 0-based; the cell's Key),
// for rows 0 to the last row with a labelled forecast: a set method
// whose coverage holds overall but not at the first rows of a sequence,
// where the model has read little, is seen here. A row without a
// labelled forecast has N 0 and NaN figures.
func ByStep(fs []Forecast, set func(Forecast) []int) []Cell {
	var cells []Cell
	for _, f := range fs {
		if f.Label < 0 || f.Label >= len(f.Probs) || f.Row < 0 {
			continue
		}
		for len(cells) <= f.Row {
			cells = append(cells, Cell{Key: len(cells)})
		}
		c := &cells[f.Row]
		s := set(f)
		c.N++
		if slices.Contains(s, f.Label) {
			c.Coverage++
		}
		c.MeanSize += float64(len(s))
	}
	for k := range cells {
		c := &cells[k]
		c.Coverage, c.MeanSize = ratio(c.Coverage, float64(c.N)), ratio(c.MeanSize, float64(c.N))
	}
	return cells
}
