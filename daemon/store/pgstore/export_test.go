package pgstore

// LostCampaigns is how many campaigns s has lost.
func (s *Store) LostCampaigns() uint64 { return s.lost.Load() }
