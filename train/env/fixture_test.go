package env

// testConfig is the world of the tests: the [env] values of
// configs/default.toml when the tests were written (8 steps, 4 frames, 2–5
// objects of 20–30 pixels moving up to 4 per frame, labels on half of them,
// noise 0.02, 3 calls per operation, confusable tasks half the time, every
// family).
func testConfig() Config {
	return Config{
		MaxSteps: 8, Frames: 4, MinObjects: 2, MaxObjects: 5, MinSize: 20, MaxSize: 30, MaxSpeed: 4,
		LabelProb: 0.5, Noise: 0.02, OpCap: 3, Confusion: 0.5, Families: AllFamilies(),
	}
}
